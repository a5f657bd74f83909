"""Links to where people already look (pure): the ``links.dashboard_url`` template filled for
one node and time window.

The template is a URL with ``{node}``, ``{cluster}``, ``{from}`` and ``{to}`` (Unix
milliseconds, as Grafana's ``from``/``to`` take them), e.g.
``https://grafana.example.com/d/gpunode-node/gpunode-node-memory?var-node={node}&var-cluster={cluster}&from={from}&to={to}``.
Values are percent-encoded; any other ``{name}`` is refused when the settings load.
"""

from __future__ import annotations

import string
from datetime import datetime, timedelta

PLACEHOLDERS = frozenset({"node", "cluster", "from", "to"})
#: the window before the collection when the diagnosis has no history of its own
LOOKBACK = timedelta(hours=1)
#: after the collection: room for what happened while the thread was read
LOOKAHEAD = timedelta(minutes=10)
_UNRESERVED = frozenset(string.ascii_letters + string.digits + "-._~")


def template_fault(template: str) -> tuple[str, dict[str, object]] | None:
    """Why ``template`` cannot be a dashboard URL template, as an error key and its params
    (``template_problem`` words them in English), or None."""
    if not template.startswith(("http://", "https://")):
        return "dashboard_url_not_http", {"template": template}
    try:
        fields = [f for _, f, _, _ in string.Formatter().parse(template) if f is not None]
    except ValueError as exc:
        return "dashboard_url_stray_brace", {"template": template, "error": str(exc)}
    unknown = sorted({f for f in fields if f not in PLACEHOLDERS})
    if unknown:
        known = ["{" + p + "}" for p in sorted(PLACEHOLDERS)]
        return "dashboard_url_unknown_fields", {
            "template": template,
            "unknown": unknown,
            "known": known,
        }
    return None


def template_problem(template: str) -> str | None:
    """Why ``template`` cannot be a dashboard URL template, in English, or None."""
    fault = template_fault(template)
    if fault is None:
        return None
    key, p = fault
    if key == "dashboard_url_not_http":
        return f"{template!r} is not an http(s) URL"
    if key == "dashboard_url_stray_brace":
        return (
            f"{template!r} has a stray brace ({p['error']}); write {{{{ and }}}} for literal braces"
        )
    return f"{template!r} names {_listed(p['unknown'])}; only {_listed(p['known'])} are filled in"


def _listed(items: object) -> str:
    return ", ".join(str(i) for i in items) if isinstance(items, list) else str(items)


def _quote(value: str) -> str:
    return "".join(
        ch if ch in _UNRESERVED else "".join(f"%{b:02X}" for b in ch.encode()) for ch in value
    )


def dashboard_link(
    template: str, *, node: str, cluster: str, start: datetime, end: datetime
) -> str:
    """``template`` filled for ``node`` in ``cluster`` from ``start`` to ``end``."""
    return template.format(
        node=_quote(node),
        cluster=_quote(cluster),
        **{"from": str(int(start.timestamp() * 1000)), "to": str(int(end.timestamp() * 1000))},
    )


def incident_window(
    collected_at: datetime, *, first_symptom: datetime | None, history_start: datetime | None
) -> tuple[datetime, datetime]:
    """The window a dashboard link shows: from the earliest of the history's start, the first
    symptom and an hour before the collection, to ten minutes after it."""
    starts = [collected_at - LOOKBACK, *(t for t in (first_symptom, history_start) if t)]
    return min(starts), collected_at + LOOKAHEAD
