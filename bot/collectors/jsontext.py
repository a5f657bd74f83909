"""Compact JSON text of a collector document, without importing ``json``.

``dumps(doc)`` is byte-for-byte ``json.dumps(doc, separators=(",", ":"))`` for what a
document holds: dicts with ``str`` keys, lists and tuples, ``str``, ``int``, ``float``,
``bool`` and ``None``. Strings go through ``_json.encode_basestring_ascii``, the C function
``json`` itself escapes with (so ``ensure_ascii`` output is identical), and numbers through
``int.__repr__`` / ``float.__repr__`` as ``json`` does. Anything else (a non-``str`` key, an
unknown type) is handed to ``json.dumps`` whole, so the answer is always ``json``'s.

Why: ``import json`` costs ~8 ms of a collection's CPU (it imports ``re``, and ``re`` imports
``enum``), about a fifth of the whole Job's run on a 2,000-process node (issue #25); the
document itself encodes in well under a millisecond either way.
"""

from __future__ import annotations

from _json import encode_basestring_ascii as _quote  # CPython's C escaper, json's own

TYPE_CHECKING = False  # importing typing costs ~3 ms of `gpunode collect`'s start-up
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

_INFINITY = float("inf")


class _UnsupportedError(Exception):
    """A value this encoder leaves to ``json``."""


def _float(value: float) -> str:
    if value != value:
        return "NaN"
    if value == _INFINITY:
        return "Infinity"
    if value == -_INFINITY:
        return "-Infinity"
    return float.__repr__(value)


def _encode(value: Any, out: Callable[[str], object], quote: Callable[[str], str]) -> None:
    if isinstance(value, str):
        out(quote(value))
    elif value is None:
        out("null")
    elif value is True:
        out("true")
    elif value is False:
        out("false")
    elif isinstance(value, int):
        out(int.__repr__(value))
    elif isinstance(value, float):
        out(_float(value))
    elif isinstance(value, dict):
        out("{")
        first = True
        for key, item in value.items():
            if not isinstance(key, str):
                raise _UnsupportedError
            if not first:
                out(",")
            first = False
            out(quote(key))
            out(":")
            _encode(item, out, quote)
        out("}")
    elif isinstance(value, list | tuple):
        out("[")
        first = True
        for item in value:
            if not first:
                out(",")
            first = False
            _encode(item, out, quote)
        out("]")
    else:
        raise _UnsupportedError


def dumps(doc: Any) -> str:
    """``json.dumps(doc, separators=(",", ":"))``, the same text."""
    parts: list[str] = []
    try:
        _encode(doc, parts.append, _quote)
    except _UnsupportedError:
        import json

        return json.dumps(doc, separators=(",", ":"))
    return "".join(parts)
