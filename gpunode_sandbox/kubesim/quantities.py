"""Kubernetes quantity strings to numbers (pure)."""

from __future__ import annotations

import functools
import math
from decimal import Decimal

_BIN = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_DEC = {
    "n": Decimal("1e-9"),
    "u": Decimal("1e-6"),
    "m": Decimal("1e-3"),
    "": Decimal(1),
    "k": Decimal(10**3),
    "M": Decimal(10**6),
    "G": Decimal(10**9),
    "T": Decimal(10**12),
    "P": Decimal(10**15),
    "E": Decimal(10**18),
}


#: a fleet's pods repeat a few dozen quantity strings; each parse is cached (a metrics list
#: of 150,000 pods parses over a million of them). Decimals are immutable: sharing is safe
@functools.lru_cache(maxsize=4096, typed=True)
def parse(q: str | int | float) -> Decimal:
    if isinstance(q, int | float):
        return Decimal(str(q))
    s = q.strip()
    for suf, mult in _BIN.items():
        if s.endswith(suf):
            return Decimal(s[: -len(suf)]) * mult
    if s and s[-1] in _DEC and not s[-1].isdecimal():
        return Decimal(s[:-1]) * _DEC[s[-1]]
    return Decimal(s)


@functools.lru_cache(maxsize=4096, typed=True)
def to_bytes(q: str | int | float) -> int:
    return math.ceil(parse(q))


@functools.lru_cache(maxsize=4096, typed=True)
def to_millicores(q: str | int | float) -> int:
    return math.ceil(parse(q) * 1000)
