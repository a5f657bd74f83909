"""Label selectors as the API server reads them, so a list served from an informer's memory
selects exactly the pods the same ``labelSelector`` query would. Pure: no I/O.

The string form is apimachinery's ``labels.Parse`` (``pkg/labels/selector.go``): requirements
joined by ``,`` (all must hold), each one of

- ``key`` (exists) and ``!key`` (does not exist);
- ``key=value``, ``key==value`` (present and equal) and ``key!=value`` (absent, or another
  value);
- ``key in (a,b)`` (present, one of them) and ``key notin (a,b)`` (absent, or none of them);
- ``key>n`` and ``key<n`` (present, and its value an integer above/below ``n``).

Whitespace between tokens is skipped; a value may be empty (``key=``, ``key in ()`` and the
empty place in ``(a,)`` are the empty string, as there). An empty selector selects
everything. A malformed one raises ``ValueError`` (the server would answer 400: the caller
then asks it and reports what it says).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import NamedTuple

#: characters that end an identifier (apimachinery's ``isSpecialSymbol`` and whitespace)
_SPECIAL = frozenset("=!(),<>")
_BLANK = frozenset(" \t\n\r\f\v")


class Requirement(NamedTuple):
    key: str
    #: one of exists, !, =, !=, in, notin, >, <
    op: str
    values: frozenset[str] = frozenset()

    def matches(self, labels: Mapping[str, str]) -> bool:
        present = self.key in labels
        op = self.op
        if op == "exists":
            return present
        if op == "!":
            return not present
        if op in ("=", "in"):
            return present and labels[self.key] in self.values
        if op in ("!=", "notin"):
            return not present or labels[self.key] not in self.values
        if not present:  # > and <
            return False
        try:
            have, bound = int(labels[self.key]), int(next(iter(self.values)))
        except ValueError:
            return False
        return have > bound if op == ">" else have < bound


#: every requirement must hold; () selects everything
Selector = tuple[Requirement, ...]


def _tokens(text: str) -> list[str]:
    out: list[str] = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c in _BLANK:
            i += 1
        elif c in _SPECIAL:
            two = text[i : i + 2]
            if two in ("==", "!="):
                out.append(two)
                i += 2
            else:
                out.append(c)
                i += 1
        else:
            j = i
            while j < n and text[j] not in _SPECIAL and text[j] not in _BLANK:
                j += 1
            out.append(text[i:j])
            i = j
    return out


def _is_word(token: str | None) -> bool:
    return token is not None and token[0] not in _SPECIAL


@functools.lru_cache(maxsize=1024)
def parse_selector(text: str) -> Selector:
    """``text`` (a ``labelSelector`` query value) as requirements; ValueError when malformed."""
    tokens = _tokens(text)
    out: list[Requirement] = []
    at = 0

    def peek(k: int = 0) -> str | None:
        return tokens[at + k] if at + k < len(tokens) else None

    while at < len(tokens):
        negated = peek() == "!"
        if negated:
            at += 1
        key = peek()
        if not _is_word(key) or key in ("in", "notin"):
            raise ValueError(f"label selector {text!r}: expected a key at {key!r}")
        assert key is not None
        at += 1
        op = peek()
        if op is None or op == ",":
            out.append(Requirement(key, "!" if negated else "exists"))
        elif negated:
            raise ValueError(f"label selector {text!r}: '!{key}' takes no operator")
        elif op in ("in", "notin"):
            at += 1
            if peek() != "(":
                raise ValueError(f"label selector {text!r}: expected '(' after {op}")
            at += 1
            values: set[str] = set()
            last = "("
            while True:
                token = peek()
                if token is None:
                    raise ValueError(f"label selector {text!r}: unclosed '('")
                at += 1
                if token == ")":
                    if last in ("(", ","):
                        values.add("")
                    break
                if token == ",":
                    if last in ("(", ","):
                        values.add("")
                elif _is_word(token) and last in ("(", ","):
                    values.add(token)
                else:
                    raise ValueError(f"label selector {text!r}: unexpected {token!r} in values")
                last = token
            out.append(Requirement(key, op, frozenset(values)))
        elif op in ("=", "==", "!=", ">", "<"):
            at += 1
            value = peek()
            if _is_word(value) and value not in ("in", "notin"):
                assert value is not None
                at += 1
            elif value is None or value == ",":
                value = ""
            else:
                raise ValueError(f"label selector {text!r}: expected a value after {op}")
            if op in (">", "<"):
                try:
                    int(value)
                except ValueError:
                    raise ValueError(
                        f"label selector {text!r}: {op} needs an integer, not {value!r}"
                    ) from None
            out.append(Requirement(key, "=" if op == "==" else op, frozenset({value})))
        else:
            raise ValueError(f"label selector {text!r}: unexpected {op!r} after {key!r}")
        if peek() is not None:
            if peek() != ",":
                raise ValueError(f"label selector {text!r}: expected ',' at {peek()!r}")
            at += 1
            if peek() is None:
                raise ValueError(f"label selector {text!r}: ends with ','")
    return tuple(out)


def selects(selector: Selector, labels: Mapping[str, str]) -> bool:
    return all(r.matches(labels) for r in selector)
