"""Markdown documents: the incident evidence report (the timeline is the postmortem's).

The report carries what the domain's write-up put in its evidence document (timestamp,
node, incident type, system memory total/used with a per-workload breakdown, GPU memory
total/used) plus findings, talking points with their sources, and the action plans. It is
the "full report" that truncated Slack messages point to, so it is never truncated.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Protocol

from bot.core.diagnosis.findings import Diagnosis
from bot.core.model.evidence import EvidenceBundle
from bot.render import environment
from bot.render.reports import context_for
from bot.render.views import build_view


class TimelineEntryLike(Protocol):
    """``bot.core.model.incidents.TimelineEntry`` or anything shaped like it."""

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
    locale: str,
) -> str:
    view = build_view(diagnosis, bundle, top_pods=10)
    full = build_view(diagnosis, bundle, top_pods=len(diagnosis.ledger.entries) + 1)
    ctx = context_for(
        view, fmt="markdown", incident=incident, locale=locale, source_limit=None, footnotes=True
    )
    return environment.render("markdown", "report.md.j2", locale=locale, all_pods=full.pods, **ctx)
