"""How values are kept, the same in both engines: times as sortable UTC text, JSON as text.

Text times compare in time order in SQLite and PostgreSQL alike (fixed-width ISO-8601 in
UTC), so every ``WHERE at < ?`` is portable and a row reads back identically from either.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from bot.errors import StoreError


def ts(at: datetime) -> str:
    """A sortable UTC text form; naive datetimes are refused (callers pass aware times)."""
    if at.tzinfo is None or at.utcoffset() is None:
        raise StoreError("the store needs timezone-aware times; pass datetime.now(UTC)")
    return at.astimezone(UTC).isoformat(timespec="microseconds")


def parse_ts(text: str | None) -> datetime | None:
    return datetime.fromisoformat(text) if text else None


def dumps(value: Any) -> str:
    """Canonical JSON: sorted keys, no spaces, so equal data hashes equally."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def loads(text: str | None) -> Any:
    return json.loads(text) if text is not None else None


#: what a NUL character is kept as: PostgreSQL text cannot hold U+0000 ("invalid byte
#: sequence"), so both engines keep the replacement character instead and read back alike
NUL_STANDIN = "\ufffd"


def storable(value: Any) -> Any:
    """``value`` as both engines can keep it: text without NUL characters."""
    if isinstance(value, str) and "\x00" in value:
        return value.replace("\x00", NUL_STANDIN)
    return value


def storable_params(params: Any) -> tuple[Any, ...]:
    return tuple(storable(p) for p in params)
