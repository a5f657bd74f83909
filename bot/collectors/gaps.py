"""Gaps: what the collector could not verify, gathered while it reads.

Kept as plain dicts (``{"source", "reason"}``, the ``Gap`` model's fields) so the hot path
needs no pydantic; identical gaps are recorded once.
"""

from __future__ import annotations


class GapLog:
    """An ordered, de-duplicated list of (source, reason) pairs."""

    def __init__(self) -> None:
        self._seen: set[tuple[str, str]] = set()
        self.items: list[dict[str, str]] = []

    def add(self, source: str, reason: str) -> None:
        key = (source, reason)
        if key not in self._seen:
            self._seen.add(key)
            self.items.append({"source": source, "reason": reason})

    def __len__(self) -> int:
        return len(self.items)
