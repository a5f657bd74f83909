"""The CEL runtime of the stand-in's admission: cel-python, with the semantics kube-apiserver's
cel-go has where cel-python differs.

What differs, and what this module does about it:

- **Equality is heterogeneous** (cel-spec "Equality"; cel-go since v0.10, the version every
  supported Kubernetes ships): ``_==_`` and ``_!=_`` are defined for any two values. Numbers
  (int, uint, double) compare by value across types (``1 == 1.0``; NaN equals nothing);
  ``null`` equals only ``null``; bool, string, bytes, timestamp and duration equal only their
  own type; lists are equal when they have the same size and equal elements in order; maps
  when they have the same keys (numeric keys compare by value) and equal values. Any other
  pair of types is simply unequal: ``1 == 'x'`` is ``false``, never an error. cel-python
  raises "no such overload" there, which a policy with ``failurePolicy: Fail`` would turn
  into a denial for the wrong reason (and ``Ignore`` into an admission).
- ``in`` on a list uses that equality; on a map it tests the keys.
- ``substring`` (cel-go's strings extension, which Kubernetes enables) is missing from
  cel-python: implemented here over code points, with cel-go's errors for a bad range.

An error operand stays an error (cel-go propagates it), so ``_==_`` never hides one.

Not modelled (the shipped policies avoid them; a policy that needs one must add it here
first, with tests): compile-time type checking (kube-apiserver compiles with
``HomogeneousAggregateLiterals``, so a literal like ``[1, 'x']`` does not compile there),
ordering across numeric types (``CrossTypeNumericComparisons``: ``1 < 1.5``), ``optional``
types, and Kubernetes' list, regex, URL, quantity and authorizer libraries.
Expressions evaluate over JSON-shaped data (``json_to_cel``), the unstructured object the
API server hands to a ValidatingAdmissionPolicy (``object`` and ``oldObject`` are ``dyn``
there: ``has()`` tests a key, ``m.all(k, ...)`` iterates keys, ``m[k]`` indexes).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping
from typing import Any

import celpy
from celpy import celparser, celtypes
from celpy.evaluation import CELEvalError

_NUMBERS = (celtypes.IntType, celtypes.UintType, celtypes.DoubleType)
_SCALARS = (
    celtypes.BoolType,
    celtypes.StringType,
    celtypes.BytesType,
    celtypes.TimestampType,
    celtypes.DurationType,
)


class CelError(Exception):
    """An expression failed to evaluate (missing field, wrong type...)."""


def cel_equal(a: Any, b: Any) -> bool:
    """cel-spec heterogeneous equality of two (non-error) CEL values."""
    if a is None or b is None:
        return a is None and b is None
    # BoolType subclasses int in cel-python: test it before the numbers
    if isinstance(a, celtypes.BoolType) or isinstance(b, celtypes.BoolType):
        return (
            isinstance(a, celtypes.BoolType)
            and isinstance(b, celtypes.BoolType)
            and bool(a) == bool(b)
        )
    if isinstance(a, _NUMBERS) and isinstance(b, _NUMBERS):
        if isinstance(a, celtypes.DoubleType) and math.isnan(a):
            return False
        if isinstance(b, celtypes.DoubleType) and math.isnan(b):
            return False
        return (
            float(a) == float(b)
            if isinstance(a, float) or isinstance(b, float)
            else int(a) == int(b)
        )
    if isinstance(a, celtypes.ListType) and isinstance(b, celtypes.ListType):
        return len(a) == len(b) and all(cel_equal(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, celtypes.MapType) and isinstance(b, celtypes.MapType):
        if len(a) != len(b):
            return False
        for key, value in a.items():
            match = [k for k in b if cel_equal(k, key)]
            if not match or not cel_equal(value, b[match[0]]):
                return False
        return True
    for kind in _SCALARS:
        if isinstance(a, kind) or isinstance(b, kind):
            return isinstance(a, kind) and isinstance(b, kind) and a == b
    return type(a) is type(b) and bool(a == b)


def _eq(a: Any, b: Any) -> Any:
    if isinstance(a, CELEvalError):
        return a
    if isinstance(b, CELEvalError):
        return b
    return celtypes.BoolType(cel_equal(a, b))


def _ne(a: Any, b: Any) -> Any:
    result = _eq(a, b)
    return result if isinstance(result, CELEvalError) else celtypes.BoolType(not result)


def _in(item: Any, container: Any) -> Any:
    if isinstance(item, CELEvalError):
        return item
    if isinstance(container, CELEvalError):
        return container
    if isinstance(container, (celtypes.ListType, celtypes.MapType)):
        return celtypes.BoolType(any(cel_equal(item, x) for x in container))
    return CELEvalError("no such overload: _in_", TypeError, (item, container))


def _substring(text: Any, start: Any, end: Any = None) -> Any:
    """cel-go's strings extension (Kubernetes' CEL library): ``s.substring(start[, end])``
    over code points; out-of-range indexes are errors, never clamped."""
    for arg in (text, start, end):
        if isinstance(arg, CELEvalError):
            return arg
    if (
        not isinstance(text, celtypes.StringType)
        or not _is_int(start)
        or not (end is None or _is_int(end))
    ):
        return CELEvalError("no such overload: substring", TypeError, (text, start, end))
    stop = len(text) if end is None else int(end)
    if int(start) < 0 or int(start) > len(text):
        return CELEvalError(f"index out of range: {int(start)}", IndexError, (start,))
    if stop < 0 or stop > len(text):
        return CELEvalError(f"index out of range: {stop}", IndexError, (end,))
    if stop < int(start):
        return CELEvalError(
            f"invalid substring range. start: {int(start)}, end: {stop}", IndexError, (start, end)
        )
    return celtypes.StringType(text[int(start) : stop])


def _is_int(value: Any) -> bool:
    return isinstance(value, celtypes.IntType) and not isinstance(value, celtypes.BoolType)


FUNCTIONS: dict[str, Any] = {"_==_": _eq, "_!=_": _ne, "_in_": _in, "substring": _substring}
_ENV = celpy.Environment()


@functools.lru_cache(maxsize=1024)
def program(expression: str) -> Any:
    return _ENV.program(_ENV.compile(expression), functions=FUNCTIONS)


def compile_error(expression: str) -> str | None:
    """Why ``expression`` does not compile, or None."""
    try:
        program(expression)
    except celparser.CELParseError as exc:
        return str(exc).strip().splitlines()[0] if str(exc).strip() else "syntax error"
    return None


def evaluate(expression: str, activation: Mapping[str, Any]) -> Any:
    """The value of ``expression`` (CEL types); CelError when evaluation fails."""
    try:
        result = program(expression).evaluate(dict(activation))
    except CELEvalError as exc:
        raise CelError(str(exc.args[0]) if exc.args else str(exc)) from exc
    if isinstance(result, CELEvalError):
        raise CelError(str(result.args[0]) if result.args else str(result))
    return result
