"""The diagnose use-case over the real store, a fake cluster and a fake Slack."""

from __future__ import annotations

import json

from bot.core.model.clusters import DEFAULT_CLUSTER, NodeRef
from bot.errors import DiagnosticJobError, KubeUnavailableError
from tests.services.world import AT, CHANNEL, NODE, REQ, REQ2, World


async def test_diagnose_opens_an_incident_and_posts_root_and_one_brief_reply(world: World) -> None:
    outcome = await world.diagnosed()
    assert outcome.created and outcome.incident_id == "INC-0001"
    [root] = world.chat.roots()
    replies = world.chat.thread(root.ts)
    assert len(replies) == 1  # the brief diagnosis message; the rest is behind Details
    assert root.edits, "the root status line is refreshed once the verdict is known"
    assert "INC-0001" in root.text and NODE in root.text
    incident = await world.store.get_incident("INC-0001")
    assert incident is not None and incident.thread_ts == root.ts
    assert await world.store.latest_snapshot("INC-0001") is not None
    kinds = [e.kind for e in await world.store.timeline("INC-0001")]
    assert "opened" in kinds and "evidence" in kinds


async def test_a_second_diagnose_joins_the_open_incident(world: World) -> None:
    await world.diagnosed(REQ)
    second = await world.diagnosed(REQ2)
    assert not second.created and second.incident_id == "INC-0001"
    [root] = world.chat.roots()
    replies = world.chat.thread(root.ts)
    # the one brief message (edited in place by the second diagnosis), the "joined" notice,
    # and one line of what changed; the state message is the one pinned
    assert len(replies) == 1 + 1 + 1
    assert replies[0].edits
    assert world.chat.pins == [(CHANNEL, replies[0].ts)]
    assert len(await world.store.snapshots("INC-0001")) == 2


async def test_an_unknown_node_gets_an_ephemeral_answer_and_no_incident(world: World) -> None:
    outcome = await world.diagnose.diagnose(
        NodeRef(cluster=DEFAULT_CLUSTER, node="gpu-node-99"), channel=CHANNEL, user=REQ
    )
    assert outcome.incident_id is None and outcome.error is not None
    assert world.chat.messages == {}
    [text] = world.chat.ephemerals_for(REQ)
    assert "gpu-node-99" in text and "gpu-node-01" in text  # names the known nodes
    assert await world.store.open_incidents() == []


async def test_a_failed_diagnostic_job_is_explained_in_the_thread(world: World) -> None:
    world.kube.fail(
        "run_diagnostic",
        DiagnosticJobError("the image could not be pulled; check the image", code="image_pull"),
    )
    outcome = await world.diagnose.diagnose(AT, channel=CHANNEL, user=REQ)
    assert outcome.diagnosis is None and outcome.incident_id == "INC-0001"
    [root] = world.chat.roots()
    [reply] = world.chat.thread(root.ts)
    assert "image_pull" in reply.text or "image could not be pulled" in reply.text
    assert "Diagnosis failed (image_pull)" in json.dumps(root.blocks)
    incident = await world.store.get_incident("INC-0001")
    assert incident is not None and incident.state == "investigating"
    assert await world.store.latest_snapshot("INC-0001") is None
    texts = [e.text for e in await world.store.timeline("INC-0001")]
    assert any("diagnosis failed: image_pull" in t for t in texts)
    # the next diagnosis works in the same thread
    again = await world.diagnosed()
    assert again.incident_id == "INC-0001" and len(world.chat.roots()) == 1


async def test_a_diagnostic_timeout_is_explained_in_the_thread(world: World) -> None:
    world.kube.fail("run_diagnostic", TimeoutError())
    outcome = await world.diagnose.diagnose(AT, channel=CHANNEL, user=REQ)
    assert outcome.error is not None and outcome.error.code == "timeout"
    [root] = world.chat.roots()
    assert len(world.chat.thread(root.ts)) == 1


async def test_an_unreachable_api_is_answered_without_opening_an_incident(world: World) -> None:
    world.kube.fail("get_node", KubeUnavailableError("the API server failed (500)"))
    outcome = await world.diagnose.diagnose(AT, channel=CHANNEL, user=REQ)
    assert outcome.incident_id is None
    assert world.chat.ephemerals_for(REQ)
    assert await world.store.open_incidents() == []


async def test_a_new_incident_has_exactly_one_opened_entry(world: World) -> None:
    await world.diagnosed(REQ)
    await world.diagnosed(REQ2)
    entries = await world.store.timeline("INC-0001")
    assert [e.actor for e in entries if e.kind == "opened"] == [REQ]


async def test_the_evidence_entry_states_the_verdict_in_the_words_wired_at_the_edge(
    world: World,
) -> None:
    await world.diagnosed()
    [evidence] = [e for e in await world.store.timeline("INC-0001") if e.kind == "evidence"]
    assert evidence.text.startswith("verdict: ")
    assert "_" not in evidence.text.split(":")[1].split()[0], evidence.text


async def test_a_diagnosis_the_bot_joins_after_an_action_mentions_nobody(world: World) -> None:
    await world.diagnosed(REQ)
    await world.diagnose.diagnose(AT, channel=CHANNEL, user="gpunode")
    [root] = world.chat.roots()
    notices = [m.text for m in world.chat.thread(root.ts) if "after the action" in m.text]
    assert len(notices) == 1
    assert "<@" not in notices[0] and "gpunode's" not in notices[0]
