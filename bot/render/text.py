"""The terminal report (``gpunode diagnose|analyze --format text``): plain, aligned text.

No ANSI colour: output is often piped or pasted into a ticket, and control characters in
node-supplied strings are neutralised by the ``plain`` filter.
"""

from __future__ import annotations

from bot.core.diagnosis.findings import Diagnosis
from bot.core.model.evidence import EvidenceBundle
from bot.render import environment
from bot.render.reports import context_for
from bot.render.views import build_view, decisive_fact


def render_report_text(
    diagnosis: Diagnosis,
    bundle: EvidenceBundle | None = None,
    *,
    incident: str | None = None,
    locale: str,
    top_pods: int = 10,
) -> str:
    view = build_view(diagnosis, bundle, top_pods=top_pods)
    ctx = context_for(view, fmt="text", incident=incident, locale=locale, source_limit=72)
    # one decisive number per talking point (issue #23 §1); ``--format markdown`` has them all
    return environment.render("text", "report.txt.j2", locale=locale, decisive=decisive_fact, **ctx)
