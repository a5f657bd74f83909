"""``ListWalker``: a JSON list answer's top-level fields, fed in pieces, each item decoded
once all of it has arrived. Pure (no I/O), and free of the bot's models: the page decoder's
process (``bot.kube.decoding``) runs it (``bot.kube.cutting``) and imports only what it runs.
"""

from __future__ import annotations

import codecs
import json
import re
from collections.abc import Callable, Iterator
from typing import Any

_SPACE = re.compile(r"[ \t\n\r]*")
#: how a Kubernetes list item begins (the API server's and metrics-server's encoders write
#: ``metadata`` first): where a run of whole items may end, for ``ListWalker``'s bulk decode
_ITEM_START = '{"metadata"'
_BLANK = " \t\n\r"
#: a stream whose undecodable rest grows past this is not a list answer
MAX_PENDING = 64 * 1024 * 1024


class ListWalker:
    """A JSON list answer's top-level fields in order, fed in pieces: ``feed`` returns the
    fields complete so far, ``("items", item)`` once per item, each item decoded only when
    all of it has arrived. A caller that reduces each item at once holds one piece and one
    item, never the whole answer (metrics-server answers a pod metrics list in one piece,
    150,000 pods on a 5,000-node cluster). Raises ValueError when the answer is not a JSON
    object, or ends before it is complete."""

    def __init__(self, *, decode_run: Callable[[str], list[Any] | None] | None = None) -> None:
        """``decode_run``: decodes a run of whole items (a JSON array, as text) to what the
        caller reads of them, or None when it cannot; the general decoder then does."""
        self._decode_run = decode_run
        self._text = ""
        self._at = 0
        self._state = "open"
        self._key = ""
        self._utf8 = codecs.getincrementaldecoder("utf-8")()
        self._decode = json.JSONDecoder().raw_decode
        self._bulk = True

    def feed(self, data: bytes, *, final: bool = False) -> list[tuple[str, Any]]:
        self._text = self._text[self._at :] + self._utf8.decode(data, final)
        self._at = 0
        out: list[tuple[str, Any]] = []
        while self._state != "done" and self._step(out, final):
            pass
        if final and self._state != "done":
            raise ValueError(f"a list answer ended early (in {self._state})")
        if len(self._text) - self._at > MAX_PENDING:
            raise ValueError("a list answer: one value is larger than 64 MiB")
        return out

    def _next(self) -> str:
        """The next non-blank character ('' when more must come), not consumed."""
        match = _SPACE.match(self._text, self._at)
        self._at = match.end() if match else self._at
        return self._text[self._at : self._at + 1]

    def _value(self, final: bool) -> tuple[bool, Any]:
        try:
            value, end = self._decode(self._text, self._at)
        except ValueError as exc:
            if final:
                raise ValueError(f"a list answer ended early or is not JSON: {exc}") from exc
            return False, None  # cut by the piece's end: wait for the next piece
        if end == len(self._text) and not final and not isinstance(value, dict | list | str):
            return False, None  # a number or literal may go on in the next piece
        self._at = end
        return True, value

    def _items(self, out: list[tuple[str, Any]]) -> bool:
        """Every whole item from here up to the last ``}, {"metadata"`` in the text, decoded
        as one array (one call of the decoder, not one per item): False when there is no
        such boundary. A boundary that is not one (inside a string, or a nested value that
        happens to begin so) leaves that array unbalanced, so the decoder refuses it: then
        this answer is walked an item at a time, as it would have been."""
        text, at = self._text, self._at
        mark = text.rfind(_ITEM_START, at + 1)
        while mark > at:
            end = mark - 1
            while end > at and text[end] in _BLANK:
                end -= 1
            if text[end] == ",":
                end -= 1
                while end > at and text[end] in _BLANK:
                    end -= 1
                if text[end] == "}":
                    break
            mark = text.rfind(_ITEM_START, at + 1, mark)
        else:
            return False
        run = "[" + text[at : end + 1] + "]"
        narrow = self._decode_run(run) if self._decode_run is not None else None
        if narrow is not None:
            values, used = narrow, len(run)
        else:
            try:
                values, used = self._decode(run)
            except ValueError:
                values, used = None, 0
        if used != len(run) or not isinstance(values, list):
            self._bulk = False
            return False
        out.extend(("items", value) for value in values)
        self._at, self._state = end + 1, "item_sep"
        return True

    def _step(self, out: list[tuple[str, Any]], final: bool) -> bool:
        char, state = self._next(), self._state
        if not char:
            return False
        if state == "open":
            if char != "{":
                raise ValueError(f"a list answer: expected '{{', found {char!r}")
            self._at, self._state = self._at + 1, "key_or_end"
        elif state == "sep" and char in ",}":
            self._at, self._state = self._at + 1, ("key" if char == "," else "done")
        elif state == "key_or_end" and char == "}":
            self._at, self._state = self._at + 1, "done"
        elif state in ("key", "key_or_end"):
            ok, key = self._value(final)
            if not ok:
                return False
            if not isinstance(key, str):
                raise ValueError(f"a list answer: a field name must be a string, not {key!r}")
            self._key, self._state = key, "colon"
        elif state == "colon":
            if char != ":":
                raise ValueError(f"a list answer: expected ':', found {char!r}")
            self._at += 1
            self._state = "value"
        elif state == "value" and self._key == "items" and char == "[":
            self._at, self._state = self._at + 1, "item_or_end"
        elif state in ("value", "item_or_end", "item"):
            if state == "item_or_end" and char == "]":
                self._at, self._state = self._at + 1, "sep"
                return True
            if state != "value" and char == "{" and self._bulk and self._items(out):
                return True
            ok, value = self._value(final)
            if not ok:
                return False
            out.append(("items" if state != "value" else self._key, value))
            self._state = "sep" if state == "value" else "item_sep"
        elif state == "item_sep":
            if char not in ",]":
                raise ValueError(f"a list answer: expected ',' or ']', found {char!r}")
            self._at += 1
            self._state = "item" if char == "," else "sep"
        else:
            raise ValueError(f"a list answer: expected ',' or '}}', found {char!r}")
        return True


def walk_list(body: bytes) -> Iterator[tuple[str, Any]]:
    """A whole JSON list answer's top-level fields (``ListWalker`` fed once)."""
    return iter(ListWalker().feed(body, final=True))
