"""``/metrics`` of the real bot after real work through the Slack and Kubernetes stand-ins:
the counters move for what happened, and only for that."""

from __future__ import annotations

from gpunode_sandbox.demo import Demo
from gpunode_sandbox.story import CHANNEL
from tests.e2e.conftest import diagnose
from tests.telemetry.scraping import scrape


async def test_a_diagnosis_moves_the_command_diagnosis_api_and_store_metrics(demo: Demo) -> None:
    before = await scrape(demo.bot_url)
    assert before.value("gpunode_commands_total") == 0
    assert before.value("gpunode_diagnosis_duration_seconds_count") == 0

    await diagnose(demo)
    after = await scrape(demo.bot_url)

    assert after.content_type == "text/plain; version=0.0.4; charset=utf-8"
    assert after.value("gpunode_commands_total", command="diagnose", outcome="ok") == 1
    assert after.value("gpunode_commands_total") == 1
    assert (
        after.value("gpunode_diagnosis_duration_seconds_count", outcome="ok", failure_code="none")
        == 1
    )
    assert after.value("gpunode_diagnosis_duration_seconds_sum") > 0
    # the diagnosis posted into the thread and read the cluster: both edges counted
    assert after.value("gpunode_slack_api_requests_total", method="chat.postMessage") >= 2
    assert after.value("gpunode_kube_api_requests_total", verb="POST", resource="jobs") == 1
    assert after.value("gpunode_kube_api_requests_total", verb="GET", resource="nodes") >= 1
    assert after.value("gpunode_slack_api_errors_total") == 0
    assert after.value("gpunode_kube_api_errors_total") == 0
    assert (
        after.value("gpunode_store_operation_duration_seconds_count", operation="save_capture") == 1
    )
    assert after.value("gpunode_leader") == 1
    (holder,) = after.labelsets("gpunode_lease_holder_info")
    assert holder["holder"].startswith("replica-")
    assert after.value("gpunode_approvals_pending") == 0


async def test_an_unknown_node_counts_a_404_and_a_failed_command(demo: Demo) -> None:
    result = await demo.slack.slash_command("U0ALICE", CHANNEL, "diagnose gpu-node-99")
    assert result.status == 200
    await demo.drain()

    after = await scrape(demo.bot_url)
    assert (
        after.value("gpunode_kube_api_errors_total", verb="GET", resource="nodes", status="404")
        >= 1
    )
    assert after.value("gpunode_commands_total", command="diagnose", outcome="failed") == 1
    # no Job ran: no diagnosis was timed
    assert after.value("gpunode_diagnosis_duration_seconds_count") == 0


async def test_a_forbidden_job_counts_a_403_and_a_failed_diagnosis(demo: Demo) -> None:
    demo.kube.faults.add("POST", r"/apis/batch/v1/namespaces/[^/]+/jobs$", status=403, times=-1)

    await diagnose(demo)
    after = await scrape(demo.bot_url)

    assert (
        after.value("gpunode_kube_api_errors_total", verb="POST", resource="jobs", status="403")
        >= 1
    )
    (failed,) = [
        s
        for s in after.labelsets("gpunode_diagnosis_duration_seconds_count")
        if s["outcome"] == "failed"
    ]
    assert failed["failure_code"] == "forbidden"
    assert after.value("gpunode_diagnosis_duration_seconds_count", outcome="ok") == 0


async def test_a_slack_error_is_counted_by_method_status_and_error(demo: Demo) -> None:
    demo.slack.fail("chat.postEphemeral", error="channel_not_found", times=1)
    result = await demo.slack.slash_command("U0ALICE", CHANNEL, "diagnose gpu-node-99")
    assert result.status == 200
    await demo.drain()

    after = await scrape(demo.bot_url)
    assert (
        after.value(
            "gpunode_slack_api_errors_total",
            method="chat.postEphemeral",
            status="200",
            error="channel_not_found",
        )
        == 1
    )
    assert after.value("gpunode_slack_api_errors_total") == 1
    assert after.value("gpunode_slack_api_requests_total", method="chat.postEphemeral") >= 1


async def test_a_usage_error_is_counted_without_the_typed_text(demo: Demo) -> None:
    for text in ("diagnose", "frobnicate the cluster", "help"):
        result = await demo.slack.slash_command("U0ALICE", CHANNEL, text)
        assert result.status == 200

    after = await scrape(demo.bot_url)
    assert after.value("gpunode_commands_total", command="diagnose", outcome="usage_error") == 1
    assert after.value("gpunode_commands_total", command="unknown", outcome="usage_error") == 1
    assert after.value("gpunode_commands_total", command="help", outcome="ok") == 1
    assert "frobnicate" not in after.text
