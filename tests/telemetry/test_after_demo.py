"""The scrape after the demo story counts exactly what the story did."""

from __future__ import annotations

from tests.telemetry.conftest import ARTIFACT, BotScrapes


def test_the_story_leaves_its_trace_in_the_metrics(bot_scrapes: BotScrapes) -> None:
    s, steps = bot_scrapes.story, bot_scrapes.steps
    assert any("tier 3 applied" in step for step in steps), steps

    assert s.value("gpunode_commands_total", command="diagnose", outcome="ok") == 1
    # the first diagnosis, and a re-diagnosis after the applied action
    assert s.value("gpunode_diagnosis_duration_seconds_count", outcome="ok") >= 2
    assert s.value("gpunode_diagnosis_duration_seconds_count", outcome="failed") == 0
    assert s.value("gpunode_actions_total", tier="3", step="execute", outcome="executed") == 1
    # after tier 3 the node is no longer at risk: tier 1 is not offered, nothing is approved
    assert any("tier 1 not offered" in step for step in steps), steps
    assert s.value("gpunode_actions_total", tier="1", step="execute", outcome="executed") == 0
    assert s.value("gpunode_approvals_pending") == 0
    assert s.value("gpunode_slack_api_requests_total", method="views.open") >= 1
    assert s.value("gpunode_leader") == 1
    assert ARTIFACT.read_text(encoding="utf-8") == s.text
