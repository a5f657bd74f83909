"""Deterministic stamps for seeded objects: the scenario clock and name suffixes.

Every seeded object is stamped relative to ``T0`` and named with hash-derived suffixes, so
the same scenario always yields the same names and times (host trees and golden files rely
on it). Pure: no clock, no randomness.
"""

from __future__ import annotations

import functools
import hashlib
import re
from datetime import UTC, datetime, timedelta
from typing import Any

from gpunode_sandbox.kubesim import scenarios as sc

#: the scenario's "now" when seeded; events and statuses are dated from it
T0 = datetime(2026, 1, 5, 8, 0, tzinfo=UTC)


@functools.lru_cache(maxsize=1024)
def ts(dt: datetime) -> str:
    """RFC 3339 to the second (cached: a fleet stamps the same few times on every pod)."""
    return dt.strftime("%Y-%m-%dT%H:%M:%SZ")


def suffix(*parts: str, n: int = 5) -> str:
    alphabet = "bcdfghjklmnpqrstvwxz2456789"
    h = int(hashlib.sha256("/".join(parts).encode()).hexdigest(), 16)
    out = ""
    for _ in range(n):
        h, r = divmod(h, len(alphabet))
        out += alphabet[r]
    return out


def rs_hash(w: sc.Workload) -> str:
    return suffix("rs", w.namespace, w.name, n=10)


#: the scenario's "now": events are dated ``age_s`` before it (``building.event_object``)
SCENARIO_NOW = T0 + timedelta(hours=2)
#: the span of scenario stamps around ``T0`` (restarts and events reach back days at most)
_SPAN = timedelta(days=400)
_STAMP = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$")


def shift_stamps(obj: Any, delta: timedelta) -> Any:
    """``obj`` with every scenario-clock stamp (up to ``_SPAN`` before ``T0``, and no later
    than the scenario's now) moved by ``delta``, so a stand-in started today shows "3 (2h
    ago)" rather than "3 (330d ago)". Stamps the API wrote from the real clock (every
    ``creationTimestamp``, a pod created after the start) are later and kept."""
    if isinstance(obj, dict):
        return {k: shift_stamps(v, delta) for k, v in obj.items()}
    if isinstance(obj, list):
        return [shift_stamps(v, delta) for v in obj]
    if isinstance(obj, str) and _STAMP.match(obj):
        when = datetime.strptime(obj[:19], "%Y-%m-%dT%H:%M:%S").replace(tzinfo=UTC)
        # scenario stamps lie at or before the scenario's now; anything later was written by
        # the API from the real clock (a creationTimestamp) and stays
        if T0 - _SPAN <= when <= SCENARIO_NOW + timedelta(hours=1):
            # a MicroTime keeps its fraction (clients parse it so)
            return ts(when + delta)[:-1] + obj[19:]
    return obj
