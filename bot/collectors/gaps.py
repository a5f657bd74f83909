"""Gaps: what the collector could not verify, gathered while it reads.

Kept as plain dicts (``{"source", "reason"}``, the ``Gap`` model's fields) so the hot path
needs no pydantic; identical gaps are recorded once. A problem that repeats per process (a
denied ``smaps_rollup`` for each of ~30 processes without ptrace rights) is recorded with
``add_each`` and reported as ONE gap naming how many processes and a few PIDs, so it does not
bury the gaps that matter.
"""

from __future__ import annotations

#: PIDs named in a summarized gap
SAMPLE = 5


class GapLog:
    """An ordered, de-duplicated list of (source, reason) pairs."""

    def __init__(self) -> None:
        self._seen: set[tuple[str, str]] = set()
        self._items: list[dict[str, str]] = []
        self._each: dict[tuple[str, str], list[int]] = {}

    def add(self, source: str, reason: str) -> None:
        key = (source, reason)
        if key not in self._seen:
            self._seen.add(key)
            self._items.append({"source": source, "reason": reason})

    def add_each(self, source: str, reason: str, pid: int) -> None:
        """One process's share of a repeated problem; summarized in ``items``."""
        pids = self._each.setdefault((source, reason), [])
        if pid not in pids:
            pids.append(pid)

    @property
    def items(self) -> list[dict[str, str]]:
        summaries = [
            {
                "source": source,
                "reason": f"{reason} for {len(pids)} process(es) (e.g. "
                f"{', '.join(str(p) for p in sorted(pids)[:SAMPLE])})",
            }
            for (source, reason), pids in self._each.items()
        ]
        return [*self._items, *summaries]

    def __len__(self) -> int:
        return len(self._items) + len(self._each)
