"""Compact JSON text of a collector document, without importing ``json``.

``dumps(doc)`` is byte-for-byte ``json.dumps(doc, separators=(",", ":"))`` for what a
document holds: dicts with ``str`` keys, lists and tuples, ``str``, ``int``, ``float``,
``bool`` and ``None``. Strings are escaped as ``json``'s ``ensure_ascii`` escapes them
(``quote``), and numbers written by ``int.__repr__`` / ``float.__repr__`` as ``json`` does.
Anything else (a non-``str`` key, an unknown type) is handed to ``json.dumps`` whole, so the
answer is always ``json``'s.

Why: ``import json`` costs ~8 ms of a collection's CPU (it imports ``re``, and ``re`` imports
``enum``), about a fifth of the whole Job's run on a 2,000-process node (issue #25); the
document itself encodes in well under a millisecond either way. Even ``json``'s C escaper
alone, ``_json``, is a shared library to find and load (~0.1 ms of the Job's run), while
almost every string a document holds (keys, names, paths, ids) is printable ASCII without a
quote or a backslash, which ``json`` writes as it is, between quotes.
"""

from __future__ import annotations

TYPE_CHECKING = False  # importing typing costs ~3 ms of `gpunode collect`'s start-up
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

_INFINITY = float("inf")
#: json's escapes for the characters it does not write as \uXXXX (json.encoder.ESCAPE_DCT)
_SHORT_ESCAPES = {
    "\\": "\\\\",
    '"': '\\"',
    "\b": "\\b",
    "\f": "\\f",
    "\n": "\\n",
    "\r": "\\r",
    "\t": "\\t",
}


def _escape(char: str) -> str:
    """One character as ``json``'s ``ensure_ascii`` writes it."""
    short = _SHORT_ESCAPES.get(char)
    if short is not None:
        return short
    code = ord(char)
    if 0x20 <= code < 0x7F:
        return char
    if code < 0x10000:
        return f"\\u{code:04x}"
    code -= 0x10000  # beyond the BMP: a UTF-16 surrogate pair, as json writes it
    return f"\\u{0xD800 | (code >> 10):04x}\\u{0xDC00 | (code & 0x3FF):04x}"


def quote(text: str) -> str:
    """``json.dumps(text)`` (``ensure_ascii``): ``json.encoder.encode_basestring_ascii``'s
    text. Printable ASCII without a quote or a backslash is written as it is; any other
    string, character by character."""
    if text.isascii() and text.isprintable() and '"' not in text and "\\" not in text:
        return f'"{text}"'
    return '"' + "".join(map(_escape, text)) + '"'


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
        _encode(doc, parts.append, quote)
    except _UnsupportedError:
        import json

        return json.dumps(doc, separators=(",", ":"))
    return "".join(parts)
