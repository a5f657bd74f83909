"""Incident threads are created once: the root is claimed in the store before it is posted,
and a diagnosis already running for the incident is joined, not run twice."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from bot.core.model.thresholds import DEFAULT
from bot.errors import SlackError
from bot.services.clusters import ClusterRegistry
from bot.services.diagnose import ROOT_CLAIM_TTL_S, DiagnoseService
from bot.store.storing import Store
from tests.services.world import AT, CHANNEL, NODE, World

USERS = [f"U{i:04d}" for i in range(10)]


async def test_concurrent_diagnoses_of_one_node_post_one_root_and_one_set_of_evidence(
    world: World,
) -> None:
    outcomes = await asyncio.gather(
        *(world.diagnose.diagnose(AT, channel=CHANNEL, user=u) for u in USERS)
    )

    [root] = world.chat.roots()
    replies = world.chat.thread(root.ts)
    assert len(world.chat.messages) == 1 + len(replies)  # nothing outside the thread
    joined = [m for m in replies if "already running" in m.text]
    assert len(joined) == 1  # one note for every request that joined, edited as they came
    assert f"({len(USERS) - 2} more requests joined it too)" in joined[0].text
    assert len(replies) - len(joined) == 1  # the brief diagnosis message: once
    assert [c.method for c in world.kube.calls].count("run_diagnostic") == 1
    assert {o.incident_id for o in outcomes} == {"INC-0001"}
    assert sum(o.created for o in outcomes) == 1
    assert all(o.diagnosis is not None for o in outcomes)


async def test_two_replicas_diagnosing_at_once_post_one_root(world: World, tmp_path: Path) -> None:
    other_store = await Store.open(world.store.path)
    try:
        other = DiagnoseService(
            ClusterRegistry.single(world.kube),
            other_store,
            world.chat,
            thread=world.thread,
            clock=world.clock,
            thresholds=DEFAULT,
        )
        await asyncio.gather(
            *(
                (world.diagnose if i % 2 else other).diagnose(AT, channel=CHANNEL, user=u)
                for i, u in enumerate(USERS)
            )
        )
    finally:
        await other_store.close()

    [root] = world.chat.roots()
    assert all(m.thread_ts == root.ts for m in world.chat.messages.values() if m is not root)
    incident = await world.store.get_incident("INC-0001")
    assert incident is not None and incident.thread_ts == root.ts


async def test_a_root_claim_left_by_a_crash_is_taken_over_once_stale(world: World) -> None:
    incident, _ = await world.store.open_or_join_incident(
        NODE, CHANNEL, opened_by="U0000", at=world.clock(), locale="en"
    )
    assert await world.store.claim_root(
        incident.id, "crashed-replica-1", at=world.clock(), stale_before=world.clock()
    )
    world.clock.advance(ROOT_CLAIM_TTL_S + 1)

    outcome = await world.diagnose.diagnose(AT, channel=CHANNEL, user="U0001")

    [root] = world.chat.roots()
    assert outcome.incident_id == incident.id and outcome.diagnosis is not None
    stored = await world.store.get_incident(incident.id)
    assert stored is not None and stored.thread_ts == root.ts


async def test_a_root_that_could_not_be_posted_lets_the_next_diagnose_post_it(
    world: World,
) -> None:
    world.chat.post_failures.append(SlackError("not_in_channel: the bot is not in the channel"))
    with pytest.raises(SlackError, match="not_in_channel"):
        await world.diagnose.diagnose(AT, channel=CHANNEL, user="U0001")

    outcome = await world.diagnose.diagnose(AT, channel="C0OTHER", user="U0002")

    [root] = world.chat.roots()
    assert root.channel == "C0OTHER"  # a thread-less incident opens where it is asked for
    assert all(m.channel == "C0OTHER" for m in world.chat.messages.values())
    assert outcome.incident_id == "INC-0001" and outcome.diagnosis is not None


async def test_a_fresh_diagnosis_waits_for_the_running_one_and_then_runs_its_own(
    world: World,
) -> None:
    first = asyncio.create_task(world.diagnose.diagnose(AT, channel=CHANNEL, user="U0001"))
    for _ in range(1000):  # until the first diagnosis is running (it posted the root)
        if world.chat.roots():
            break
        await asyncio.sleep(0)
    after_action = await world.diagnose.diagnose(AT, channel=CHANNEL, user="gpunode", fresh=True)
    await first

    assert [c.method for c in world.kube.calls].count("run_diagnostic") == 2
    assert len(await world.store.snapshots("INC-0001")) == 2
    assert after_action.diagnosis is not None
