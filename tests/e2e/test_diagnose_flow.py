"""End to end: the slash command over real HTTP, the seed cluster, the thread."""

from __future__ import annotations

import pytest

from gpunode_sandbox.demo import Demo
from gpunode_sandbox.story import CHANNEL
from tests.e2e.conftest import (
    NODE,
    diagnose,
    ephemeral_texts,
    failed_chat_calls,
    incident_roots,
    text_of,
    thread,
)

pytestmark = pytest.mark.slow


async def test_diagnose_opens_one_incident_whose_thread_holds_evidence_points_and_actions(
    demo: Demo,
) -> None:
    root_ts = await diagnose(demo)

    assert len(incident_roots(demo.slack)) == 1
    root_posts = [
        c.args
        for c in demo.slack.calls
        if c.method == "chat.postMessage" and not c.args.get("thread_ts")
    ]
    root_updates = [
        c.args
        for c in demo.slack.calls
        if c.method == "chat.update" and c.args.get("ts") == root_ts
    ]
    assert "Investigating" in str(root_posts[0])
    assert root_updates, "the root message was never updated"
    final_root = text_of(demo.slack.message(CHANNEL, root_ts) or {})
    assert "INC-0001" in final_root and NODE in final_root
    assert "Host memory is exhausted" in final_root and "preprocess" in final_root  # verdict
    replies = [text_of(m) for m in thread(demo, root_ts)[1:]]
    assert any("Memory evidence" in r for r in replies)
    assert any("AI/ML team" in r and "Ops team" in r for r in replies)
    assert any("gpunode_tier1" in r for r in replies)
    assert failed_chat_calls(demo.slack) == []
    assert demo.runtime.services.bg.errors == []


async def test_a_second_diagnose_of_the_same_node_joins_the_open_incident(demo: Demo) -> None:
    first = await diagnose(demo)
    second = await diagnose(demo, user="U0BOB")

    assert second == first
    assert len(incident_roots(demo.slack)) == 1
    assert len(await demo.runtime.store.open_incidents(NODE)) == 1
    assert failed_chat_calls(demo.slack) == []


async def test_a_reply_delivered_three_times_lands_in_the_timeline_once(demo: Demo) -> None:
    root_ts = await diagnose(demo)

    await demo.slack.post_user_message(
        "U0CAROL", CHANNEL, "our notebook is not the problem", thread_ts=root_ts, deliveries=3
    )
    await demo.drain()

    entries = await demo.runtime.store.timeline("INC-0001")
    said = [e for e in entries if e.text == "our notebook is not the problem"]
    assert len(said) == 1
    assert said[0].actor == "U0CAROL"


async def test_diagnose_uploads_a_png_chart_into_the_thread_with_slacks_upload_flow(
    demo: Demo,
) -> None:
    root_ts = await diagnose(demo)

    [chart] = [f for f in demo.slack.files(CHANNEL) if f["name"].endswith(".png")]
    assert chart["thread_ts"] == root_ts and chart["name"].startswith("INC-0001-memory-")
    png = chart["content"]
    assert png.startswith(b"\x89PNG\r\n\x1a\n")
    asked = [c.args for c in demo.slack.calls if c.method == "files.getUploadURLExternal"]
    assert [int(a["length"]) for a in asked] == [len(png)]
    [done] = [c.args for c in demo.slack.calls if c.method == "files.completeUploadExternal"]
    assert (done["channel_id"], done["thread_ts"]) == (CHANNEL, root_ts)
    [msg] = [m for m in thread(demo, root_ts) if m.get("files")]
    assert msg["files"][0]["mimetype"] == "image/png"


async def test_timeline_command_uploads_the_postmortem_draft_into_the_thread(
    demo: Demo,
) -> None:
    root_ts = await diagnose(demo)
    charts = {f["id"] for f in demo.slack.files(CHANNEL)}

    await demo.slack.slash_command("U0ALICE", CHANNEL, "timeline INC-0001")
    await demo.drain()

    files = [f for f in demo.slack.files(CHANNEL) if f["id"] not in charts]
    assert [f["name"] for f in files] == [
        "INC-0001-postmortem-start.png",
        "INC-0001-postmortem.md",
        "INC-0001-postmortem.html",
    ]
    assert all(f["thread_ts"] == root_ts for f in files)
    md = files[1]["content"].decode()
    assert md.startswith("# Postmortem draft: INC-0001") and NODE in md
    assert "![" in md and "(INC-0001-postmortem-start.png)" in md
    assert "alice (Alice Ng)" in md and "U0ALICE" not in md.split("## Appendix")[0]
    html = files[2]["content"].decode()
    assert html.startswith("<!DOCTYPE html>") and 'src="data:image/png;base64,' in html


async def test_status_lists_the_open_incident_to_the_asker_only(demo: Demo) -> None:
    await diagnose(demo)

    await demo.slack.slash_command("U0BOB", CHANNEL, "status")
    await demo.drain()

    assert any("INC-0001" in t for t in ephemeral_texts(demo.slack, "U0BOB"))


async def test_top_ranks_the_gpu_nodes(demo: Demo) -> None:
    await demo.slack.slash_command("U0ALICE", CHANNEL, "top")
    await demo.drain()

    shown = "\n".join(ephemeral_texts(demo.slack, "U0ALICE"))
    assert "gpu-node-01" in shown and "gpu-node-02" in shown
    assert "cpu-node-01" not in shown
    assert failed_chat_calls(demo.slack) == []


async def test_help_is_answered_in_the_ack(demo: Demo) -> None:
    result = await demo.slack.slash_command("U0DAVE", CHANNEL, "help")

    assert result.status == 200
    assert "diagnose" in result.body
    assert demo.slack.calls == [] or all(c.ok for c in demo.slack.calls)


async def test_a_malformed_command_gets_an_ephemeral_usage_line(demo: Demo) -> None:
    result = await demo.slack.slash_command("U0ALICE", CHANNEL, "diagnose")
    await demo.drain()

    assert result.status == 200
    ack = result.json()
    assert ack["response_type"] == "ephemeral"
    assert "/gpunode diagnose [CLUSTER/]NODE" in ack["text"]
    assert incident_roots(demo.slack) == []
    assert demo.slack.messages(CHANNEL) == []  # nothing public


async def test_an_unknown_node_gets_a_clear_reply_and_no_incident(demo: Demo) -> None:
    await demo.slack.slash_command("U0ALICE", CHANNEL, "diagnose gpu-node-99")
    await demo.drain()

    replies = "\n".join(ephemeral_texts(demo.slack, "U0ALICE"))
    assert "gpu-node-99" in replies and "gpu-node-01" in replies  # names the known nodes
    assert "Traceback" not in replies
    assert incident_roots(demo.slack) == []
    assert await demo.runtime.store.open_incidents() == []
    assert demo.runtime.services.bg.errors == []


@pytest.mark.parametrize("command", ["diagnose gpu-node-01", "resolve INC-0001 fixed"])
async def test_a_user_without_a_role_cannot_diagnose_or_resolve(demo: Demo, command: str) -> None:
    await diagnose(demo)
    jobs_before = [r for r in demo.kube.requests if r[0] == "POST" and "/jobs" in r[1]]

    await demo.slack.slash_command("U0DAVE", CHANNEL, command)
    await demo.drain()

    assert any("no_entry" in t for t in ephemeral_texts(demo.slack, "U0DAVE"))
    audit = await demo.runtime.store.audit_since(None)
    assert [(a.actor, a.decision) for a in audit if a.actor == "U0DAVE"] == [("U0DAVE", "denied")]
    assert [i.state for i in await demo.runtime.store.open_incidents(NODE)] != []
    assert [r for r in demo.kube.requests if r[0] == "POST" and "/jobs" in r[1]] == jobs_before
