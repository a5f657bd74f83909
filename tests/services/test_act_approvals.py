"""Tier 1 needs a second person; exactly-once execution under concurrent clicks and replicas."""

from __future__ import annotations

import asyncio
from pathlib import Path

from bot.core.reporting.outcomes import ActionResult, ApprovalRequested, refused
from bot.render.acting import APPROVE
from bot.services.operations import IncidentOps
from bot.store.storing import Store
from tests.services.world import (
    APPROVER,
    CHANNEL,
    GROUP_APPROVER,
    REQ,
    REQ2,
    STRANGER,
    TTL_S,
    World,
)


async def _approval_id(world: World) -> str:
    for msg in world.chat.messages.values():
        for action_id, value in world.chat.buttons(msg.ts):
            if action_id == APPROVE:
                return value
    raise AssertionError("no approval request posted")


async def _requested_tier1(world: World) -> tuple[str, str]:
    action_id = await world.request(1)
    await world.act.apply(action_id=action_id, user=REQ, channel=CHANNEL)
    assert world.kube.effects() == [], "tier 1 waits for approval"
    return action_id, await _approval_id(world)


async def test_tier1_runs_once_after_another_users_approval(world: World) -> None:
    action_id, approval_id = await _requested_tier1(world)
    assert await world.state(action_id) == "requested"
    await world.act.vote(approval_id=approval_id, user=APPROVER, channel=CHANNEL, yes=True)
    # the seed's tier 1 evicts only preprocess: it alone covers the shortage
    assert [c.method for c in world.kube.effects()] == ["cordon", "annotate_node", "evict"]
    assert world.kube.node.unschedulable
    assert await world.state(action_id) == "succeeded"
    req = await world.store.get_approval(approval_id)
    assert req is not None and req.state == "executed"
    decisions = [d for _, _, d in await world.audit(action_id)]
    assert decisions == ["needs_approval", "needs_approval", "approved", "claimed", "executed"]


async def test_an_approver_through_a_user_group_counts(world: World) -> None:
    action_id, approval_id = await _requested_tier1(world)
    await world.act.vote(approval_id=approval_id, user=GROUP_APPROVER, channel=CHANNEL, yes=True)
    assert await world.state(action_id) == "succeeded"


async def test_self_approval_is_refused(world: World) -> None:
    action_id, approval_id = await _requested_tier1(world)
    await world.act.vote(approval_id=approval_id, user=REQ, channel=CHANNEL, yes=True)
    assert world.kube.effects() == []
    assert world.thread.refusals(REQ) == [refused("vote_self_approval_rejected")]
    assert world.chat.ephemerals_for(REQ)  # worded and posted to them alone
    assert (REQ, "tier1.approve", "self_approval_rejected") in await world.audit(action_id)
    assert await world.state(action_id) == "requested"


async def test_a_user_without_an_approver_role_cannot_approve(world: World) -> None:
    action_id, approval_id = await _requested_tier1(world)
    for user in (REQ2, STRANGER):
        await world.act.vote(approval_id=approval_id, user=user, channel=CHANNEL, yes=True)
        assert world.thread.refusals(user) == [refused("vote_not_eligible")]
    assert world.kube.effects() == []
    rows = await world.audit(action_id)
    assert (REQ2, "tier1.approve", "not_eligible") in rows
    assert (STRANGER, "tier1.approve", "not_eligible") in rows


async def test_an_expired_approval_is_refused_and_ends_the_request(world: World) -> None:
    action_id, approval_id = await _requested_tier1(world)
    world.clock.advance(TTL_S + 1)
    await world.act.vote(approval_id=approval_id, user=APPROVER, channel=CHANNEL, yes=True)
    assert world.kube.effects() == []
    assert world.thread.refusals(APPROVER) == [refused("vote_expired")]
    assert await world.state(action_id) == "refused"
    msg = await world.action_message(action_id)
    assert world.chat.buttons(msg.ts) == []
    assert world.thread.outcomes(ActionResult)[-1].state == "expired"


async def test_a_denial_ends_the_request(world: World) -> None:
    action_id, approval_id = await _requested_tier1(world)
    await world.act.vote(approval_id=approval_id, user=APPROVER, channel=CHANNEL, yes=False)
    await world.act.vote(approval_id=approval_id, user=GROUP_APPROVER, channel=CHANNEL, yes=True)
    await world.act.apply(action_id=action_id, user=REQ, channel=CHANNEL)
    assert world.kube.effects() == []
    assert await world.state(action_id) == "refused"
    assert world.thread.outcomes(ActionResult)[-1].state == "denied"


async def test_repeated_apply_posts_one_approval_request(world: World) -> None:
    action_id = await world.request(1)
    await asyncio.gather(
        *(world.act.apply(action_id=action_id, user=REQ, channel=CHANNEL) for _ in range(20))
    )
    assert len(world.thread.outcomes(ApprovalRequested)) == 1
    assert world.thread.notices("approval_pending")  # the repeated clicks are answered


async def test_a_hundred_concurrent_apply_clicks_execute_once(world: World) -> None:
    action_id = await world.request(3, memory_limit="70Gi", memory_request="60Gi")
    await asyncio.gather(
        *(world.act.apply(action_id=action_id, user=REQ, channel=CHANNEL) for _ in range(100))
    )
    assert len(world.kube.effects()) == 1
    assert await world.state(action_id) == "succeeded"
    executed = [d for _, _, d in await world.audit(action_id) if d == "executed"]
    assert executed == ["executed"]


async def test_a_hundred_concurrent_approve_clicks_execute_once(world: World) -> None:
    action_id, approval_id = await _requested_tier1(world)
    users = [APPROVER, GROUP_APPROVER] * 50
    await asyncio.gather(
        *(world.act.vote(approval_id=approval_id, user=u, channel=CHANNEL, yes=True) for u in users)
    )
    assert len(world.kube.effects("cordon")) == 1
    assert len(world.kube.effects()) == 3  # cordon, annotate against scale-down, evict preprocess
    assert [d for _, _, d in await world.audit(action_id)].count("executed") == 1


async def test_two_replicas_sharing_the_database_execute_once(world: World, tmp_path: Path) -> None:
    other = await Store.open(world.store.path)
    world.extra.append(other)
    replica_b = world.service(other, replica="replica-b")
    action_id = await world.request(3, memory_limit="70Gi", memory_request="60Gi")
    clicks = [
        svc.apply(action_id=action_id, user=REQ, channel=CHANNEL)
        for _ in range(25)
        for svc in (world.act, replica_b)
    ]
    await asyncio.gather(*clicks)
    assert len(world.kube.effects()) == 1
    record = await world.store.get_action(action_id)
    assert record is not None and record.state == "succeeded"
    assert record.claimed_by in ("replica-a", "replica-b")


async def test_two_replicas_approving_at_once_execute_once(world: World) -> None:
    other = await Store.open(world.store.path)
    world.extra.append(other)
    replica_b = world.service(other, replica="replica-b")
    action_id, approval_id = await _requested_tier1(world)
    await asyncio.gather(
        world.act.vote(approval_id=approval_id, user=APPROVER, channel=CHANNEL, yes=True),
        replica_b.vote(approval_id=approval_id, user=GROUP_APPROVER, channel=CHANNEL, yes=True),
    )
    assert len(world.kube.effects("cordon")) == 1
    assert await world.state(action_id) == "succeeded"


async def test_resolving_the_incident_removes_the_scale_down_protection_tier_1_added(
    world: World,
) -> None:
    ca = "cluster-autoscaler.kubernetes.io/scale-down-disabled"
    karpenter = "karpenter.sh/do-not-disrupt"
    # the ops team protected the node from Karpenter by hand before the incident
    world.kube.node = world.kube.node.model_copy(update={"annotations": {karpenter: "true"}})
    action_id, approval_id = await _requested_tier1(world)
    await world.act.vote(approval_id=approval_id, user=APPROVER, channel=CHANNEL, yes=True)
    assert await world.state(action_id) == "succeeded"
    assert world.kube.node.annotations == {karpenter: "true", ca: "true"}

    ops = IncidentOps(world.store, clock=world.clock, clusters=world.diagnose.clusters)
    record = await world.store.get_action(action_id)
    assert record is not None and record.incident_id is not None
    await ops.resolve(record.incident_id, by=REQ, note="fixed")

    assert world.kube.node.annotations == {karpenter: "true"}  # only what tier 1 added
    assert world.kube.node.unschedulable  # the cordon stays: uncordoning is a human's call
    notes = [e for e in await ops.timeline(record.incident_id) if e.kind == "note"]
    assert [n.data.get("scale_down_protection") for n in notes] == ["removed"]


async def test_an_undone_tier_1_leaves_nothing_for_resolve_to_remove(world: World) -> None:
    action_id, approval_id = await _requested_tier1(world)
    await world.act.vote(approval_id=approval_id, user=APPROVER, channel=CHANNEL, yes=True)
    await world.act.undo(action_id=action_id, user=REQ, channel=CHANNEL)
    assert world.kube.node.annotations == {}
    ops = IncidentOps(world.store, clock=world.clock, clusters=world.diagnose.clusters)
    calls = len(world.kube.effects())
    record = await world.store.get_action(action_id)
    assert record is not None and record.incident_id is not None
    await ops.resolve(record.incident_id, by=REQ, note="fixed")
    assert len(world.kube.effects()) == calls
