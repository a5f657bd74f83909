"""Gaps: what the collector could not verify, gathered while it reads.

Kept as plain dicts (``{"source", "reason"}`` and, when given, ``"code"`` and ``"params"``:
the ``Gap`` model's fields) so the hot path needs no pydantic; identical gaps are recorded
once. ``reason`` is the English text; ``code`` and ``params`` say it as data, for a presenter
to word in the reader's language. A problem that repeats per process (a
denied ``smaps_rollup`` for each of ~30 processes without ptrace rights) is recorded with
``add_each`` and reported as ONE gap naming how many processes and a few PIDs, so it does not
bury the gaps that matter.
"""

from __future__ import annotations

TYPE_CHECKING = False  # importing typing costs ~3 ms of `gpunode collect`'s start-up
if TYPE_CHECKING:
    from typing import Any

#: PIDs named in a summarized gap
SAMPLE = 5


class GapLog:
    """An ordered, de-duplicated list of (source, reason) pairs."""

    def __init__(self) -> None:
        self._seen: set[tuple[str, str]] = set()
        self._items: list[dict[str, Any]] = []
        self._each: dict[tuple[str, str], list[int]] = {}
        self._codes: dict[tuple[str, str], str] = {}

    def add(
        self, source: str, reason: str, code: str = "", params: dict[str, object] | None = None
    ) -> None:
        key = (source, reason)
        if key not in self._seen:
            self._seen.add(key)
            item: dict[str, Any] = {"source": source, "reason": reason}
            if code:
                item["code"], item["params"] = code, dict(params or {})
            self._items.append(item)

    def add_each(self, source: str, reason: str, pid: int, code: str = "") -> None:
        """One process's share of a repeated problem; summarized in ``items`` (whose params
        are then ``count`` and a few ``pids``)."""
        pids = self._each.setdefault((source, reason), [])
        if code:
            self._codes[(source, reason)] = code
        if pid not in pids:
            pids.append(pid)

    @property
    def items(self) -> list[dict[str, Any]]:
        summaries: list[dict[str, Any]] = []
        for (source, reason), pids in self._each.items():
            sample = sorted(pids)[:SAMPLE]
            item: dict[str, Any] = {
                "source": source,
                "reason": f"{reason} for {len(pids)} process(es) (e.g. "
                f"{', '.join(str(p) for p in sample)})",
            }
            code = self._codes.get((source, reason), "")
            if code:
                item["code"], item["params"] = code, {"count": len(pids), "pids": sample}
            summaries.append(item)
        return [*self._items, *summaries]

    def __len__(self) -> int:
        return len(self._items) + len(self._each)
