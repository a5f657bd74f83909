"""The postmortem renders: untrusted strings are escaped for each format, charts embedded."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from bot.core.reporting.postmortem import ActionSummary, Postmortem, TimelineRow
from bot.render.postmortem import render_postmortem_html, render_postmortem_markdown

T0 = datetime(2026, 12, 1, 2, 0, tzinfo=UTC)
EVIL = "<script>alert(1)</script> **bold** | pipe"


def _pm() -> Postmortem:
    return Postmortem(
        incident_id="INC-0003",
        node="gpu-node-01",
        cluster="prod",
        state="resolved",
        opened_at=T0,
        ended_at=T0 + timedelta(minutes=42),
        resolved=True,
        opened_by=EVIL,
        actions=[
            ActionSummary(
                action_id="A1",
                tier=3,
                target="Deployment/ml/x",
                state="succeeded",
                requested_by="alice",
                requested_at=T0,
                reason=EVIL,
            )
        ],
        participants=[EVIL],
        timeline=[TimelineRow(at=T0, kind="note", actor=EVIL, text=EVIL, data={"k": EVIL})],
    )


def test_the_html_escapes_every_untrusted_string_and_embeds_the_charts() -> None:
    html = render_postmortem_html(_pm(), charts={"start": b"\x89PNG fake"})
    assert "<script>" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "Duration</th><td>42m" in html
    # no snapshot was stored, so there is no evidence section to put a chart in
    assert "No diagnosis was stored for this incident." in html


def test_the_markdown_escapes_untrusted_strings_and_keeps_tables_intact() -> None:
    md = render_postmortem_markdown(_pm(), charts={})
    assert "<script>" not in md and "&lt;script&gt;" in md
    assert "\\*\\*bold\\*\\*" in md and "\\| pipe" in md
    assert "| Duration | 42m |" in md
    assert "- Why: &lt;script&gt;" in md
