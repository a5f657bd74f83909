"""Parse human durations such as ``30m``, ``4h``, ``7d`` or ``1h30m`` (pure).

Used by ``gpunode audit --since`` and anywhere a user types a span of time. A bare number is
refused on purpose: "since 30" is ambiguous (seconds? minutes?), so the user must say.
"""

from __future__ import annotations

import re
from datetime import timedelta

from bot.errors import UsageError

_UNIT_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}
_PART = re.compile(r"(\d+)([smhdw])")
_WHOLE = re.compile(r"(?:\d+[smhdw])+")
#: a guard against absurd spans that would overflow datetime arithmetic (100 years)
_MAX_SECONDS = 100 * 365 * 86400

DURATION_HELP = "a duration like 30m, 4h, 7d or 1h30m (units: s, m, h, d, w)"


def parse_duration(text: str) -> timedelta:
    """``"4h"`` -> ``timedelta(hours=4)``. Raises UsageError naming the accepted forms."""
    cleaned = text.strip().lower().replace(" ", "")
    if not cleaned or not _WHOLE.fullmatch(cleaned):
        raise UsageError(
            f"{text!r} is not a duration; use {DURATION_HELP}",
            usage=DURATION_HELP,
            key="not_a_duration",
            params={"text": text},
        )
    seconds = sum(int(n) * _UNIT_SECONDS[unit] for n, unit in _PART.findall(cleaned))
    if seconds <= 0:
        raise UsageError(
            f"{text!r} is zero; give a positive duration",
            usage=DURATION_HELP,
            key="duration_zero",
            params={"text": text},
        )
    if seconds > _MAX_SECONDS:
        raise UsageError(
            f"{text!r} is longer than 100 years",
            usage=DURATION_HELP,
            key="duration_too_long",
            params={"text": text},
        )
    return timedelta(seconds=seconds)


def format_duration(span: timedelta) -> str:
    """The inverse for display: ``timedelta(hours=1, minutes=30)`` -> ``"1h30m"``."""
    remaining = int(span.total_seconds())
    if remaining <= 0:
        return "0s"
    parts: list[str] = []
    for unit in ("d", "h", "m", "s"):
        count, remaining = divmod(remaining, _UNIT_SECONDS[unit])
        if count:
            parts.append(f"{count}{unit}")
    return "".join(parts)
