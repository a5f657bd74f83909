"""The metric names a PromQL expression reads, found by a small lexer (promtool 2.x has no
offline "parse this query" mode; its syntax check is used beside this, see the tests).

What is skipped, and why it is not a metric name:
- string literals ("..." '...' `...`): label values, regexes, label_replace arguments;
- label matchers ``{...}``: label names and values;
- ``by (...)``, ``without (...)``, ``on (...)``, ``ignoring (...)``, ``group_left (...)``,
  ``group_right (...)``: label names;
- ``[5m]``, ``[1h:1m]`` ranges and subqueries, ``offset 5m``, ``@ 123``: durations;
- numbers (``0.99``, ``1e3``, ``0x1f``), Grafana variables (``$job``, ``${job}``,
  ``$__rate_interval``);
- keywords (``and or unless bool offset by without on ignoring group_left group_right``)
  and function or aggregation names (an identifier followed by ``(``, or by
  ``by``/``without`` then ``(`` for aggregations written ``sum by (le) (...)``).
A ``{__name__="x"}`` selector names ``x``.
"""

from __future__ import annotations

import re

_STRING = re.compile(r'"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'|`[^`]*`')
_LABEL_LISTS = re.compile(
    r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^()]*\)", re.IGNORECASE
)
_BRACKETS = re.compile(r"\[[^\]]*\]")
_GRAFANA_VAR = re.compile(r"\$\{[^}]*\}|\$\w+")
_OFFSET = re.compile(r"\b(offset)\s+-?[0-9a-z]+|@\s*[0-9.]+|@\s*(start|end)\(\)", re.IGNORECASE)
_NAME_MATCHER = re.compile(r'__name__\s*=\s*"([a-zA-Z_:][a-zA-Z0-9_:]*)"')
_IDENT = re.compile(r"(?<![\w.])([a-zA-Z_:][a-zA-Z0-9_:]*)")
KEYWORDS = {
    "and",
    "or",
    "unless",
    "bool",
    "offset",
    "by",
    "without",
    "on",
    "ignoring",
    "group_left",
    "group_right",
    "inf",
    "nan",
    "atan2",
}


def metric_names(expr: str) -> set[str]:
    """Every metric name ``expr`` selects (with its ``_bucket``/``_count``/... suffix)."""
    names = set(_NAME_MATCHER.findall(expr))
    text = _STRING.sub('""', expr)
    text = _GRAFANA_VAR.sub("5m", text)
    text = _OFFSET.sub(" ", text)
    text = re.sub(r"\{[^{}]*\}", " ", text)  # label matchers
    text = _LABEL_LISTS.sub(" ", text)
    text = _BRACKETS.sub(" ", text)
    for match in _IDENT.finditer(text):
        word = match.group(1)
        if word.lower() in KEYWORDS:
            continue
        rest = text[match.end() :]
        if re.match(r"\s*\(", rest):  # a function call
            continue
        if re.match(r"\s*(by|without)\b", rest, re.IGNORECASE):  # sum by (...) (...)
            continue
        names.add(word)
    return names


def grafana_exprs(dashboard: dict[str, object]) -> list[tuple[str, str]]:
    """(where, PromQL) for every panel target and every query variable of a dashboard."""
    out: list[tuple[str, str]] = []

    def walk(panels: object) -> None:
        for panel in panels if isinstance(panels, list) else []:
            for target in panel.get("targets") or []:
                if target.get("expr"):
                    out.append((f"panel {panel.get('title')!r} {target['refId']}", target["expr"]))
            walk(panel.get("panels"))

    walk(dashboard.get("panels"))
    templating = dashboard.get("templating")
    for var in templating.get("list", []) if isinstance(templating, dict) else []:
        query = var.get("query")
        if var.get("type") == "query":
            text = query.get("query") if isinstance(query, dict) else query
            out.append((f"variable {var['name']}", _label_values_query(str(text))))
    return out


def _label_values_query(text: str) -> str:
    """Grafana's ``label_values(metric, label)`` as the selector it queries (``metric``)."""
    m = re.fullmatch(r"\s*label_values\(\s*(.+?)\s*,\s*\w+\s*\)\s*", text)
    return m.group(1) if m else text
