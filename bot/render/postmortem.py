"""The postmortem draft as Markdown and as one self-contained HTML file.

Both render the same ``bot.core.reporting.postmortem.Postmortem`` through templates
(``templates/markdown/postmortem.md.j2``, ``templates/html/postmortem.html.j2``).
Sentences (verdicts, findings, talking points) come from the shared sentence templates: in
Markdown escaped for Markdown, in HTML as plain text that the HTML environment's autoescape
escapes. Charts: Markdown links the PNG files uploaded next to it; HTML embeds them as
``data:image/png;base64`` URIs, so the file stands alone (no network, no attachments).
"""

from __future__ import annotations

import base64
from collections.abc import Mapping
from typing import Any

from bot.core.diagnosis.findings import Diagnosis
from bot.core.reporting.postmortem import Postmortem, Snapshot
from bot.core.reporting.postmortem_story import StoryRow
from bot.render import environment
from bot.render.prevention import render_prevention_files, source_line
from bot.render.sentences import Fmt, sentence
from bot.render.timeline import keyed_error
from bot.render.views import build_view


def _evidence(snap: Snapshot | None, fmt: Fmt, locale: str) -> dict[str, Any] | None:
    if snap is None:
        return None
    d: Diagnosis = snap.diagnosis
    view = build_view(d, snap.bundle, top_pods=5)
    v = d.verdict
    return {
        "at": snap.at,
        "cause": v.cause,
        "confidence": v.confidence,
        "verdict": sentence(
            "verdicts", v.cause, v.params, fmt=fmt, subject=v.subject, locale=locale
        ),
        "used_bytes": view.ledger.used_bytes,
        "total_bytes": view.ledger.total_bytes,
        "pods": [(p.label, p.bytes) for p in view.pods],
        "kernel": [(k.label, k.bytes) for k in view.kernel],
        "gpu_used_bytes": view.gpu_used_bytes,
        "gpu_total_bytes": view.gpu_total_bytes,
        "findings": [
            sentence(
                "findings",
                f.code,
                f.params,
                fmt=fmt,
                subject=f.subject,
                severity=f.severity,
                locale=locale,
            )
            for f in d.findings
            if f.severity in ("critical", "warning")
        ],
    }


def _points(snap: Snapshot | None, fmt: Fmt, locale: str) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {"ai_team": [], "ops_team": []}
    for tp in snap.diagnosis.talking_points if snap is not None else []:
        text = sentence("talking_points", tp.key, tp.params, fmt=fmt, locale=locale)
        out[tp.audience].append(("(unverified) " if tp.unverified else "") + text)
    return out


#: contributing factors listed under the root cause (the rest are in the evidence appendix)
CONTRIBUTING = 6


def context(pm: Postmortem, *, fmt: Fmt, locale: str) -> dict[str, Any]:
    """Template context shared by both formats (sentences pre-rendered in ``fmt``)."""
    kit = (
        render_prevention_files(pm.prevention, locale=locale, source=pm.prevention_source)
        if pm.prevention is not None
        else {}
    )
    kit_source = (
        source_line(pm.prevention, pm.prevention_source, fmt=fmt, locale=locale)
        if pm.prevention is not None
        else ""
    )
    start = _evidence(pm.start, fmt, locale)
    return {
        "pm": pm.model_copy(update={"story": [_worded(r, locale) for r in pm.story]}),
        # the start's critical and warning findings, the verdict's own first: what made the
        # shortage possible or worse (the full list stays in the evidence appendix)
        "contributing": start["findings"][:CONTRIBUTING] if start is not None else [],
        "kit": kit,
        "kit_source": kit_source,
        "start": start,
        "end": _evidence(pm.end, fmt, locale),
        "points": _points(pm.start, fmt, locale),
    }


def _worded(row: StoryRow, locale: str) -> StoryRow:
    """A diagnosis row whose verdict was kept as data, worded in ``locale`` (rows recorded
    before keep the sentence they were recorded with); an entry that quotes a keyed error
    (a crash) with that error worded in ``locale``."""
    said = row.values.get("said")
    if isinstance(said, dict):
        row = row.model_copy(update={"values": {**row.values, "said": keyed_error(said, locale)}})
    verdict = row.values.get("verdict")
    if row.code != "evidence" or not isinstance(verdict, dict):
        return row
    text = sentence(
        "verdicts",
        str(verdict.get("cause", "")),
        dict(verdict.get("params") or {}),
        fmt="text",
        subject=verdict.get("subject"),
        locale=locale,
    )
    return row.model_copy(update={"values": {**row.values, "text": text}})


def render_postmortem_markdown(pm: Postmortem, *, charts: Mapping[str, str], locale: str) -> str:
    """Markdown; ``charts`` maps ``start``/``end`` to the PNG file names uploaded with it."""
    ctx = context(pm, fmt="markdown", locale=locale)
    return environment.render("markdown", "postmortem.md.j2", locale=locale, charts=charts, **ctx)


def data_uri(png: bytes) -> str:
    return "data:image/png;base64," + base64.b64encode(png).decode("ascii")


def render_postmortem_html(pm: Postmortem, *, charts: Mapping[str, bytes], locale: str) -> str:
    """One HTML file; ``charts`` maps ``start``/``end`` to PNG bytes, embedded as data URIs."""
    ctx = context(pm, fmt="text", locale=locale)
    name = environment.localized_name("html", "postmortem.html.j2", locale=locale)
    uris = {k: data_uri(v) for k, v in charts.items()}
    env = environment.get_environment(locale=locale, html=True)
    return env.get_template(name).render(charts=uris, **ctx)
