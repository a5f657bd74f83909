"""A checkup's rows (``gpunode doctor``, and ``serve`` at start): one finding each, with its
level (pure data). The checks are the edge's: the cluster's in ``bot.services.doctor``, the
store's in ``bot.store.checkup``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Level = Literal["ok", "warn", "FAIL"]


@dataclass(frozen=True)
class Row:
    area: str
    level: Level
    what: str
    detail: str = ""


def failed(rows: list[Row]) -> bool:
    return any(r.level == "FAIL" for r in rows)
