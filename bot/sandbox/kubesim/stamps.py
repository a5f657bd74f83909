"""Deterministic stamps for seeded objects: the scenario clock and name suffixes.

Every seeded object is stamped relative to ``T0`` and named with hash-derived suffixes, so
the same scenario always yields the same names and times (host trees and golden files rely
on it). Pure: no clock, no randomness.
"""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime

from bot.sandbox.kubesim import scenarios as sc

#: the scenario's "now" when seeded; events and statuses are dated from it
T0 = datetime(2026, 1, 5, 8, 0, tzinfo=UTC)


def ts(dt: datetime) -> str:
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
