"""Markdown documents: the incident evidence report and the timeline export.

The report carries what the domain's write-up put in its evidence document (timestamp,
node, incident type, system memory total/used with a per-workload breakdown, GPU memory
total/used) plus findings, talking points with their sources, and the action plans. It is
the "full report" that truncated Slack messages point to, so it is never truncated.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any, Protocol

from bot.core.evidence import EvidenceBundle
from bot.core.findings import Diagnosis
from bot.render import environment
from bot.render.reports import context_for
from bot.render.views import build_view


class TimelineEntryLike(Protocol):
    """``bot.core.incidents.TimelineEntry`` or anything shaped like it."""

    @property
    def incident_id(self) -> str: ...
    @property
    def at(self) -> datetime: ...
    @property
    def kind(self) -> str: ...
    @property
    def actor(self) -> str: ...
    @property
    def text(self) -> str: ...
    @property
    def data(self) -> dict[str, Any]: ...


def render_report_markdown(
    diagnosis: Diagnosis,
    bundle: EvidenceBundle | None = None,
    *,
    incident: str | None = None,
    locale: str = "en",
) -> str:
    view = build_view(diagnosis, bundle, top_pods=10)
    full = build_view(diagnosis, bundle, top_pods=len(diagnosis.ledger.entries) + 1)
    ctx = context_for(
        view, fmt="markdown", incident=incident, locale=locale, source_limit=None, footnotes=True
    )
    return environment.render("markdown", "report.md.j2", locale=locale, all_pods=full.pods, **ctx)


def _attr(obj: object, name: str, default: Any = None) -> Any:
    if isinstance(obj, dict):
        return obj.get(name, default)
    return getattr(obj, name, default)


def _snapshot_row(snap: object) -> dict[str, Any]:
    """A snapshot (store record or dict) with ``at`` and optional ``sha256`` and
    ``diagnosis_json``; the diagnosis, when present, gives the verdict and used memory."""
    row: dict[str, Any] = {"at": _attr(snap, "at"), "sha256": _attr(snap, "sha256")}
    raw = _attr(snap, "diagnosis_json") or _attr(snap, "diagnosis")
    diagnosis: Diagnosis | None = None
    if isinstance(raw, Diagnosis):
        diagnosis = raw
    elif isinstance(raw, str | bytes):
        diagnosis = Diagnosis.model_validate_json(raw)
    elif isinstance(raw, dict):
        diagnosis = Diagnosis.model_validate(raw)
    row["view"] = build_view(diagnosis) if diagnosis is not None else None
    return row


def render_timeline_markdown(
    incident: object,
    entries: Sequence[TimelineEntryLike],
    snapshots: Sequence[object] = (),
    *,
    locale: str = "en",
) -> str:
    """The postmortem export: incident header, every timeline entry in order (``at``, then
    ``seq``), and the evidence snapshots taken along the way (before/after actions).

    ``incident`` is a ``bot.core.incidents.Incident`` (or anything with ``id``, ``node``,
    ``state``, ``opened_at``...), or just the incident id as a string.
    """
    fields = (
        "id",
        "node",
        "state",
        "channel",
        "opened_at",
        "opened_by",
        "resolved_at",
        "resolution_note",
    )
    if isinstance(incident, str):
        info: dict[str, Any] = dict.fromkeys(fields) | {"id": incident}
    else:
        info = {k: _attr(incident, k) for k in fields}
    ordered = sorted(
        entries, key=lambda e: (e.at, _attr(e, "seq") if _attr(e, "seq") is not None else 0)
    )
    rows = sorted(
        (_snapshot_row(s) for s in snapshots),
        key=lambda r: r["at"] or datetime.min,
    )
    return environment.render(
        "markdown", "timeline.md.j2", locale=locale, inc=info, entries=ordered, snapshots=rows
    )
