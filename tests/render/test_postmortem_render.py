"""The postmortem renders: untrusted strings are escaped for each format, charts embedded."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from bot.core.reporting.postmortem import ActionSummary, Eviction, Postmortem, TimelineRow
from bot.core.reporting.postmortem_story import StoryRow
from bot.render.postmortem import render_postmortem_html, render_postmortem_markdown
from bot.render.sentences import sentence

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
    html = render_postmortem_html(_pm(), charts={"start": b"\x89PNG fake"}, locale="en")
    assert "<script>" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "Duration</th><td>42m" in html
    # no snapshot was stored, so there is no evidence section to put a chart in
    assert "No diagnosis was stored for this incident." in html


def test_the_markdown_escapes_untrusted_strings_and_keeps_tables_intact() -> None:
    md = render_postmortem_markdown(_pm(), charts={}, locale="en")
    assert "<script>" not in md and "&lt;script&gt;" in md
    assert "\\*\\*bold\\*\\*" in md and "\\| pipe" in md
    assert "| Duration | 42m |" in md
    assert "- Why: &lt;script&gt;" in md


def test_a_verdict_kept_as_data_is_worded_in_the_readers_language() -> None:
    """The timeline records the verdict's cause and parameters with its English sentence; a
    Chinese postmortem words the verdict in Chinese, and one recorded before (text only)
    keeps its sentence."""
    verdict = {"cause": "host_memory_workload", "subject": "data-prep/preprocess", "params": {}}
    english = sentence(
        "verdicts",
        "host_memory_workload",
        {},
        fmt="text",
        subject="data-prep/preprocess",
        locale="en",
    )
    chinese = sentence(
        "verdicts",
        "host_memory_workload",
        {},
        fmt="text",
        subject="data-prep/preprocess",
        locale="zh-CN",
    )
    kept = StoryRow(
        at=T0, code="evidence", who="gpunode", values={"text": english, "verdict": verdict}
    )
    old = StoryRow(at=T0, code="evidence", who="gpunode", values={"text": "an older sentence"})
    pm = _pm().model_copy(update={"story": [kept, old]})

    zh = render_postmortem_markdown(pm, charts={}, locale="zh-CN")
    en = render_postmortem_markdown(pm, charts={}, locale="en")

    assert chinese != english
    assert chinese in zh and english not in zh
    assert english in en
    assert "an older sentence" in zh and "an older sentence" in en


def test_a_kernel_oom_kill_in_the_story_is_worded_in_the_readers_language() -> None:
    """The story words the chart marker from its kind and params; a Chinese postmortem keeps
    the process as the kernel named it."""
    kill = StoryRow(
        at=T0,
        code="symptom_oom_kill",
        values={
            "pod": "ml/train-0",
            "what": "cgroup OOM kill python",
            "params": {"scope": "cgroup", "process": "python"},
        },
    )
    pm = _pm().model_copy(update={"story": [kill]})

    zh = render_postmortem_markdown(pm, charts={}, locale="zh-CN")
    en = render_postmortem_markdown(pm, charts={}, locale="en")

    assert "cgroup OOM kill：python" in zh and "OOM kill python" not in zh
    assert "cgroup OOM kill python" in en


def test_an_actions_evictions_are_worded_in_the_readers_language() -> None:
    """Each eviction's status (evicted, failed, ...) is a code the postmortem words."""
    [action] = _pm().actions
    evictions = [Eviction(pod="ml/a", status="evicted"), Eviction(pod="ml/b", status="failed")]
    pm = _pm().model_copy(update={"actions": [action.model_copy(update={"evictions": evictions})]})

    zh = render_postmortem_markdown(pm, charts={}, locale="zh-CN")
    html = render_postmortem_html(pm, charts={}, locale="zh-CN")
    en = render_postmortem_markdown(pm, charts={}, locale="en")

    assert "ml/a：已驱逐" in zh.replace("\\", "") and "ml/b：失败" in zh.replace("\\", "")
    assert "ml/a：已驱逐" in html
    assert "Eviction of ml/a: evicted" in en.replace("\\", "")
