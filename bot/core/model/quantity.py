"""Kubernetes resource quantities, parsed and printed exactly as apimachinery does.

Why a port: ``kubectl describe node`` prints ``Quantity.String()``, whose canonical form
depends on the quantity's *format* (DecimalSI, BinarySI, DecimalExponent) and on which
quantity a sum started from. The ``kubernetes`` Python client's ``parse_quantity`` drops the
format, so it cannot reproduce kubectl's text. Pure: no I/O.

Contract (``k8s.io/apimachinery/pkg/api/resource``, see reference/kubernetes.md §1.5):

- ``parse_quantity`` accepts ``[+-]digits[.digits]suffix``; suffixes ``n u m "" k M G T P E``
  (DecimalSI), ``Ki Mi Gi Ti Pi Ei`` (BinarySI), ``eN``/``EN`` (DecimalExponent). Precision is
  kept to nano; anything finer is rounded away from zero. A BinarySI value strictly between
  0 and 1 becomes DecimalSI; BinarySI values are capped at 2^63-1.
- ``Quantity.canonical()`` is ``Quantity.String()``: "0" for zero; DecimalSI strips factors
  of ten and lowers the exponent to a multiple of three; BinarySI prints with base-1024
  suffixes when the value is an integer with magnitude >= 1024, else falls back to DecimalSI.
- ``add`` keeps the receiver's format unless the receiver is zero (``Quantity.Add``).
- ``value()`` / ``milli_value()`` take the ceiling at that scale (``Value``/``MilliValue``).

Deviation: texts over ``MAX_TEXT`` characters and exponents beyond ``MAX_EXPONENT`` are
refused (``QuantityError``) rather than computed: either overflows every resource (``Value()``
is an int64) and would cost unbounded big-number arithmetic on untrusted input.

Deviation: values beyond the largest suffix (>= 1000E, >= 1024Ei) print with the largest
suffix and a longer mantissa; apimachinery's output there is not meaningful for resources.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache
from typing import Literal

QuantityFormat = Literal["DecimalSI", "BinarySI", "DecimalExponent"]

NANO = 10**9
MAX_INT64 = 2**63 - 1
MAX_TEXT = 1000  # under CPython's 4300-digit int() limit; real quantities are < 30 chars
MAX_EXPONENT = 1000  # 1e1000 is far past int64 yet cheap to compute and to refuse later

DECIMAL_SUFFIXES: dict[str, int] = {
    "n": -9,
    "u": -6,
    "m": -3,
    "": 0,
    "k": 3,
    "M": 6,
    "G": 9,
    "T": 12,
    "P": 15,
    "E": 18,
}
BINARY_SUFFIXES: dict[str, int] = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
_DEC_BY_EXP = {exp: suffix for suffix, exp in DECIMAL_SUFFIXES.items()}
_BIN_BY_POWER = ["", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"]

_SYNTAX = re.compile(r"([+-]?)(\d*)(?:\.(\d*))?([eEinumkKMGTP]*[+-]?\d*)")


class QuantityError(ValueError):
    """The text is not a Kubernetes quantity."""


@dataclass(frozen=True, slots=True)
class Quantity:
    """An exact quantity: ``nanos`` is the value times 10^9 (an integer, by construction)."""

    nanos: int = 0
    format: QuantityFormat = "DecimalSI"

    # -- arithmetic --------------------------------------------------------------------
    def add(self, other: Quantity) -> Quantity:
        """``Quantity.Add``: the receiver's format wins unless the receiver is zero."""
        fmt = other.format if self.nanos == 0 else self.format
        return Quantity(self.nanos + other.nanos, fmt)

    def cmp(self, other: Quantity) -> int:
        return (self.nanos > other.nanos) - (self.nanos < other.nanos)

    def is_zero(self) -> bool:
        return self.nanos == 0

    def value(self) -> int:
        """``Value()``: ceiling of the value at scale 0."""
        return -(-self.nanos // NANO)

    def milli_value(self) -> int:
        """``MilliValue()``: ceiling of the value at scale -3."""
        return -(-self.nanos // 10**6)

    def as_float(self) -> float:
        return self.nanos / NANO

    # -- text ------------------------------------------------------------------------
    def canonical(self) -> str:
        """``Quantity.String()`` (``CanonicalizeBytes``)."""
        if self.nanos == 0:
            return "0"
        fmt = self.format
        if fmt == "BinarySI":
            if -1024 * NANO < self.nanos < 1024 * NANO or self.nanos % NANO:
                fmt = "DecimalSI"
            else:
                return _binary_text(self.nanos // NANO)
        mantissa, exponent = _strip(self.nanos, 10, -9)
        shift = exponent % 3
        mantissa *= 10**shift
        exponent -= shift
        if fmt == "DecimalExponent":
            return f"{mantissa}" if exponent == 0 else f"{mantissa}e{exponent}"
        if exponent > 18:
            mantissa *= 10 ** (exponent - 18)
            exponent = 18
        return f"{mantissa}{_DEC_BY_EXP[exponent]}"

    def __str__(self) -> str:
        return self.canonical()


def _strip(mantissa: int, base: int, exponent: int) -> tuple[int, int]:
    """Move factors of ``base`` from the mantissa into the exponent (removeInt64Factors)."""
    while mantissa % base == 0:
        mantissa //= base
        exponent += 1
    return mantissa, exponent


def _binary_text(value: int) -> str:
    mantissa, power = _strip(value, 1024, 0)
    if power >= len(_BIN_BY_POWER):
        mantissa *= 1024 ** (power - len(_BIN_BY_POWER) + 1)
        power = len(_BIN_BY_POWER) - 1
    return f"{mantissa}{_BIN_BY_POWER[power]}"


def _interpret(suffix: str) -> tuple[int, int, QuantityFormat]:
    """Suffix -> (base, exponent, format), as ``suffixHandler.interpret``."""
    if suffix in DECIMAL_SUFFIXES:
        return 10, DECIMAL_SUFFIXES[suffix], "DecimalSI"
    if suffix in BINARY_SUFFIXES:
        return 2, BINARY_SUFFIXES[suffix], "BinarySI"
    if len(suffix) > 1 and suffix[0] in "eE":
        try:
            exponent = int(suffix[1:])
        except ValueError:
            pass
        else:
            if abs(exponent) > MAX_EXPONENT:
                raise QuantityError(f"exponent {exponent} is out of range")
            return 10, exponent, "DecimalExponent"
    raise QuantityError(f"unknown quantity suffix {suffix!r}")


def parse_quantity(text: str | int | float) -> Quantity:
    """Parse API quantity text (JSON numbers are accepted as their decimal text)."""
    if isinstance(text, bool):
        raise QuantityError("a boolean is not a quantity")
    if isinstance(text, int | float):
        text = repr(text) if isinstance(text, float) else str(text)
    return _parse_text(text)


@lru_cache(maxsize=4096)
def _parse_text(text: str) -> Quantity:
    """Cached: a fleet repeats the same few hundred quantity strings (Quantity is frozen)."""
    raw = text.strip()
    if len(raw) > MAX_TEXT:
        raise QuantityError(f"a quantity of {len(raw)} characters is too long")
    if raw == "0":
        return Quantity(0, "DecimalSI")
    match = _SYNTAX.fullmatch(raw)
    if not match or not (match.group(2) or match.group(3)):
        raise QuantityError(
            f"{text!r} is not a quantity (expected e.g. '500m', '2', '1.5Gi', '1e3')"
        )
    sign, whole, frac, suffix = match.groups()
    frac = frac or ""
    base, exponent, fmt = _interpret(suffix)
    amount = Fraction(int((whole or "0") + frac), 10 ** len(frac))
    amount *= Fraction(base) ** exponent
    scaled = amount * NANO
    nanos = -(-scaled.numerator // scaled.denominator)  # round up (away from zero: >= 0)
    if fmt == "BinarySI":
        nanos = min(nanos, MAX_INT64 * NANO)
        if 0 < nanos < NANO:
            fmt = "DecimalSI"
    return Quantity(-nanos if sign == "-" else nanos, fmt)


def canonical(text: str | int | float) -> str:
    """The text the API server would store and kubectl would print for ``text``."""
    return parse_quantity(text).canonical()


def quantity_value(text: str | None) -> float | None:
    """A quantity's numeric value (bytes, cores, count); None if absent or malformed."""
    if text is None:
        return None
    try:
        return parse_quantity(text).as_float()
    except QuantityError:
        return None
