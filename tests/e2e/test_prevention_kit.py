"""The prevention kit reaches people: ``/gpunode prevent NODE`` and the
**Prevention kit** button under the evidence, end to end over real HTTP between the Slack
and Kubernetes stand-ins on the seed scenario; and the timeline export carries the kit."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from bot.render.prevention import KIT_FILES, README
from gpunode_sandbox.demo import Demo
from gpunode_sandbox.story import CHANNEL
from tests.e2e.conftest import (
    NODE,
    diagnose,
    ephemeral_texts,
    failed_chat_calls,
    press,
    text_of,
    thread,
)

pytestmark = pytest.mark.slow
KIT_NAMES = [f"{NODE}-{name}" for name in (*KIT_FILES, README)]


def kit_files(demo: Demo, *, thread_ts: str | None) -> dict[str, bytes]:
    files = [f for f in demo.slack.files(CHANNEL) if f["name"] in KIT_NAMES]
    assert all(f["thread_ts"] == thread_ts for f in files)
    return {f["name"][len(NODE) + 1 :]: f["content"] for f in files}


def kit_message(messages: list[dict[str, Any]]) -> dict[str, Any]:
    [msg] = [m for m in messages if "Prevention kit: " + NODE in text_of(m)]
    return msg


async def test_prevent_command_shares_the_explained_kit_in_the_channel_when_no_incident_is_open(
    demo: Demo,
) -> None:
    result = await demo.slack.slash_command("U0CAROL", CHANNEL, f"prevent {NODE}")
    assert result.status == 200, result.body
    await demo.drain()

    top = [m for m in demo.slack.messages(CHANNEL) if m.get("bot_id")]
    explained = text_of(kit_message(top))
    assert "as read from the cluster at" in explained
    assert "`requests.nvidia.com/gpu: 8` in ml-train" in explained  # the seed's trainer
    assert "251.0 GiB (Node status.capacity)" in explained
    [upload] = [m for m in top if m.get("files")]
    assert [f["name"] for f in upload["files"]] == KIT_NAMES
    assert upload["text"] == f"Prevention kit for {NODE}: 6 files."
    files = kit_files(demo, thread_ts=None)
    quota = yaml.safe_load(files["resourcequota.yaml"].decode().split("---", 1)[1])
    assert quota["kind"] == "ResourceQuota" and quota["metadata"]["namespace"] == "ml-train"
    assert "## Every value and the evidence behind it" in files[README].decode()
    [done] = [c.args for c in demo.slack.calls if c.method == "files.completeUploadExternal"]
    assert done["channel_id"] == CHANNEL and not done.get("thread_ts")
    assert failed_chat_calls(demo.slack) == []
    assert demo.runtime.services.bg.errors == []


async def test_prevent_command_goes_into_the_open_incident_thread_and_its_timeline(
    demo: Demo,
) -> None:
    root_ts = await diagnose(demo)

    await demo.slack.slash_command("U0ALICE", CHANNEL, f"prevent {NODE}")
    await demo.drain()

    assert "as read from the cluster" in text_of(kit_message(thread(demo, root_ts)))
    assert set(kit_files(demo, thread_ts=root_ts)) == {*KIT_FILES, README}
    [note] = [e for e in await demo.runtime.store.timeline("INC-0001") if "kit" in e.text]
    assert note.actor == "U0ALICE" and note.data["files"] == KIT_NAMES
    assert note.said == {"code": "prevention_shared", "params": {}}


async def test_prevent_command_for_an_unknown_node_tells_the_user_and_shares_nothing(
    demo: Demo,
) -> None:
    await demo.slack.slash_command("U0ALICE", CHANNEL, "prevent gpu-node-99")
    await demo.drain()

    assert any("gpu-node-99" in t and "failed" in t for t in ephemeral_texts(demo.slack, "U0ALICE"))
    assert kit_files(demo, thread_ts=None) == {}


async def test_the_evidence_carries_a_prevention_kit_button_that_shares_the_latest_evidence_kit(
    demo: Demo,
) -> None:
    root_ts = await diagnose(demo)
    [evidence] = [m for m in thread(demo, root_ts) if "Memory evidence" in text_of(m)]
    [button] = [
        e
        for b in evidence["blocks"]
        if b["type"] == "actions"
        for e in b["elements"]
        if e["action_id"] == "gpunode_prevention"
    ]
    assert button["value"] == "INC-0001" and button["text"]["text"] == "Prevention kit"

    await press(demo, root_ts, "U0CAROL", "gpunode_prevention")  # a viewer: reading is enough

    explained = text_of(kit_message(thread(demo, root_ts)))
    assert "stored with the latest evidence of INC-0001" in explained
    assert "`evictionHard memory.available: 2571Mi`" in explained
    files = kit_files(demo, thread_ts=root_ts)
    assert set(files) == {*KIT_FILES, README}
    policy = yaml.safe_load(files["descheduler-policy.yaml"])
    assert policy["apiVersion"] == "descheduler/v1alpha2"
    entries = await demo.runtime.store.timeline("INC-0001")
    assert [e.actor for e in entries if e.text == "prevention kit shared"] == ["U0CAROL"]
    assert failed_chat_calls(demo.slack) == []
    assert demo.runtime.services.bg.errors == []


async def test_someone_bound_to_no_role_is_refused_the_kit_at_click_time(demo: Demo) -> None:
    root_ts = await diagnose(demo)

    await press(demo, root_ts, "U0DAVE", "gpunode_prevention")

    assert kit_files(demo, thread_ts=root_ts) == {}
    denied = [r for r in await demo.runtime.store.audit_since() if r.actor == "U0DAVE"]
    assert [(r.action, r.decision) for r in denied] == [("view", "denied")]


async def test_the_timeline_export_carries_the_kit_from_the_latest_evidence_labelled(
    demo: Demo,
) -> None:
    await diagnose(demo)

    await demo.slack.slash_command("U0ALICE", CHANNEL, "timeline INC-0001")
    await demo.drain()

    [md] = [f for f in demo.slack.files(CHANNEL) if f["name"] == "INC-0001-postmortem.md"]
    text = md["content"].decode()
    appendix = text.split("## Appendix: the prevention kit", 1)[1]
    assert "stored with the latest evidence of INC-0001" in appendix.split("\n\n", 2)[1]
    for name in KIT_FILES:
        assert f"### {name}" in appendix
    assert "`requests.nvidia.com/gpu: 8` in ml-train" in appendix
