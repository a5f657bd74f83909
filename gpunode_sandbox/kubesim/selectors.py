"""Label and field selectors, as the API server parses them from query strings.

Pure. Label selectors: ``a=b``, ``a==b``, ``a!=b``, ``a in (x,y)``, ``a notin (x)``, ``a``,
``!a``. Field selectors: ``path=value``, ``path==value``, ``path!=value`` over dotted paths
(``spec.nodeName``, ``status.phase``, ``metadata.name``, ``involvedObject.kind``...).
``LabelSelector`` objects (matchLabels / matchExpressions) are matched by ``match_label_selector``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

from gpunode_sandbox.kubesim.statuses import ApiError

Pred = Callable[[Mapping[str, str]], bool]

_SET = re.compile(r"^\s*(!?)([A-Za-z0-9_./-]+)\s*(?:(notin|in)\s*\(([^)]*)\))?\s*$")
_EQ = re.compile(r"^\s*([A-Za-z0-9_./-]+)\s*(==|=|!=)\s*([A-Za-z0-9_./-]*)\s*$")


def _split_terms(text: str) -> list[str]:
    """Split on commas that are not inside parentheses."""
    terms, depth, cur = [], 0, ""
    for ch in text:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        if ch == "," and depth == 0:
            terms.append(cur)
            cur = ""
        else:
            cur += ch
    if cur.strip():
        terms.append(cur)
    return [t for t in terms if t.strip()]


def _requirement(key: str, op: str, values: frozenset[str]) -> Pred:
    """One label requirement as a predicate (op: = != in notin exists !)."""

    def pred(labels: Mapping[str, str]) -> bool:
        value = labels.get(key)
        if op == "=":
            return value is not None and value in values
        if op == "!=":
            return value is None or value not in values
        if op == "in":
            return value in values
        if op == "notin":
            return value not in values
        if op == "exists":
            return key in labels
        return key not in labels

    return pred


def parse_label_selector(text: str | None) -> Pred:
    """A predicate over a labels mapping; raises a 400 ApiError on bad syntax."""
    preds: list[Pred] = []
    for term in _split_terms(text or ""):
        if m := _EQ.match(term):
            k, op, v = m.groups()
            preds.append(_requirement(k, "!=" if op == "!=" else "=", frozenset([v])))
        elif m := _SET.match(term):
            neg, k, op, vals = m.groups()
            values = frozenset(x.strip() for x in (vals or "").split(",") if x.strip())
            preds.append(_requirement(k, op or ("!" if neg else "exists"), values))
        else:
            raise ApiError(400, f"unable to parse requirement: {term!r}")
    return lambda labels: all(p(labels) for p in preds)


def field_value(obj: Mapping[str, Any], path: str) -> str:
    cur: Any = obj
    for part in path.split("."):
        cur = cur.get(part) if isinstance(cur, Mapping) else None
    if cur is None:
        return ""
    if isinstance(cur, bool):
        return "true" if cur else "false"
    return str(cur)


def _field_terms(text: str | None) -> list[tuple[str, bool, str]]:
    terms: list[tuple[str, bool, str]] = []
    for term in _split_terms(text or ""):
        m = re.match(r"^\s*([A-Za-z0-9_.]+)\s*(==|=|!=)\s*(.*?)\s*$", term)
        if not m:
            raise ApiError(400, f"invalid field selector: {term!r}")
        path, op, value = m.groups()
        terms.append((path, op != "!=", value))
    return terms


def field_terms(text: str | None) -> list[str]:
    """The field paths a field selector names (400 on bad syntax)."""
    return [path for path, _, _ in _field_terms(text)]


def parse_field_selector(text: str | None) -> Callable[[Mapping[str, Any]], bool]:
    """A predicate over a whole object; raises a 400 ApiError on bad syntax."""
    terms = _field_terms(text)

    def pred(obj: Mapping[str, Any]) -> bool:
        return all((field_value(obj, p) == v) == eq for p, eq, v in terms)

    return pred


def match_label_selector(selector: Mapping[str, Any] | None, labels: Mapping[str, str]) -> bool:
    """``metav1.LabelSelector`` semantics; an empty selector matches everything."""
    if not selector:
        return True
    for k, v in (selector.get("matchLabels") or {}).items():
        if labels.get(k) != v:
            return False
    for expr in selector.get("matchExpressions") or []:
        k, op, vals = expr["key"], expr["operator"], set(expr.get("values") or [])
        ok = {
            "In": labels.get(k) in vals,
            "NotIn": labels.get(k) not in vals,
            "Exists": k in labels,
            "DoesNotExist": k not in labels,
        }.get(op, False)
        if not ok:
            return False
    return True
