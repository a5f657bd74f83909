"""How many alert-driven diagnoses to start: per request, per node and per time window.

Pure: the caller passes the diagnoses already started (node, when) and the time now. An
Alertmanager that fires for the whole fleet (or someone who can post to the intake) must not
turn one request into hundreds of Jobs and Slack messages; what is over a cap is skipped and
said once (see ``bot.services.alerts``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Literal

SkipReason = Literal["per_request", "per_node", "per_window"]


@dataclass(frozen=True)
class AlertCaps:
    per_request: int
    per_node: int
    per_window: int
    window_s: float


def recent(
    started: Sequence[tuple[str, datetime]], *, now: datetime, caps: AlertCaps
) -> list[tuple[str, datetime]]:
    """The diagnoses still inside the window (older ones no longer count)."""
    since = now - timedelta(seconds=caps.window_s)
    return [(node, at) for node, at in started if at > since]


def over_cap(
    node: str,
    started: Sequence[tuple[str, datetime]],
    *,
    in_request: int,
    now: datetime,
    caps: AlertCaps,
) -> SkipReason | None:
    """Why a diagnosis of ``node`` may not start now, or None when it may.

    ``started``: diagnoses started before (any request); ``in_request``: how many this
    request started already (they are in ``started`` too)."""
    window = recent(started, now=now, caps=caps)
    if in_request >= caps.per_request:
        return "per_request"
    if sum(1 for n, _ in window if n == node) >= caps.per_node:
        return "per_node"
    if len(window) >= caps.per_window:
        return "per_window"
    return None
