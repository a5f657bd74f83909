"""The "Approval needed" message loses its Approve/Deny buttons once the request is decided."""

from __future__ import annotations

import pytest

from bot.core.model.clusters import NodeRef
from bot.core.reporting.outcomes import ActionResult, ApprovalClosed, ApprovalRequested
from bot.render.acting import APPROVE
from bot.services import approving
from bot.services.clusters import ClusterRegistry
from tests.services.fakes import Posted
from tests.services.world import APPROVER, CHANNEL, NODE, REQ, TTL_S, World


async def _approval(world: World) -> tuple[str, Posted]:
    action_id = await world.request(1)
    await world.act.apply(action_id=action_id, user=REQ, channel=CHANNEL)
    for msg in world.chat.messages.values():
        if any(button == APPROVE for button, _ in world.chat.buttons(msg.ts)):
            return action_id, msg
    raise AssertionError("no approval request posted")


@pytest.mark.parametrize(("yes", "expected"), [(True, "approved"), (False, "denied")])
async def test_a_decided_approval_message_shows_the_outcome_without_buttons(
    world: World, yes: bool, expected: str
) -> None:
    _action_id, msg = await _approval(world)
    approval_id = world.chat.buttons(msg.ts)[0][1]
    await world.act.vote(approval_id=approval_id, user=APPROVER, channel=CHANNEL, yes=yes)
    assert world.chat.buttons(msg.ts) == []
    [asked] = world.thread.outcomes(ApprovalRequested)
    assert asked.request.id == approval_id and asked.request.requester == REQ
    [closed] = world.thread.outcomes(ApprovalClosed)
    assert (closed.state, closed.by, closed.request.id) == (expected, APPROVER, approval_id)


async def test_an_approval_clicked_after_expiry_shows_expired_without_buttons(
    world: World,
) -> None:
    _action_id, msg = await _approval(world)
    approval_id = world.chat.buttons(msg.ts)[0][1]
    world.clock.advance(TTL_S + 1)
    await world.act.vote(approval_id=approval_id, user=APPROVER, channel=CHANNEL, yes=True)
    assert world.chat.buttons(msg.ts) == []
    assert [c.state for c in world.thread.outcomes(ApprovalClosed)] == ["expired"]


async def test_an_unanswered_approval_expires_by_itself_once(world: World) -> None:
    action_id, msg = await _approval(world)
    assert await approving.expire_overdue(world.act.deps) == 0, "not due yet"
    world.clock.advance(TTL_S + 1)
    assert await approving.expire_overdue(world.act.deps) == 1
    assert await approving.expire_overdue(world.act.deps) == 0
    assert world.chat.buttons(msg.ts) == []
    assert [c.state for c in world.thread.outcomes(ApprovalClosed)] == ["expired"]
    assert world.thread.outcomes(ActionResult)[-1].state == "expired"
    assert await world.state(action_id) == "refused"
    assert ("gpunode", "tier1.approve", "expired") in await world.audit(action_id)


async def test_an_approval_expiring_in_another_cluster_is_audited_and_shown_in_that_cluster(
    world: World,
) -> None:
    """The expiry sweep acts in each action's cluster: its audit row names that cluster, and
    the action's message names the node as ``cluster/node`` like every other action message."""
    clusters = ClusterRegistry({"prod-eu": lambda: world.kube, "prod-us": lambda: world.kube})
    world.act = world.service(world.store, replica="replica-a", clusters=clusters)
    diagnosed = await world.act.deps.diagnose.diagnose(
        NodeRef(cluster="prod-us", node=NODE), channel=CHANNEL, user=REQ
    )
    assert diagnosed.diagnosis is not None, diagnosed.error
    action_id, _msg = await _approval(world)
    world.clock.advance(TTL_S + 1)
    assert await approving.expire_overdue(world.act.deps) == 1
    rows = [r for r in await world.store.audit_since(None) if r.action_id == action_id]
    assert [r.cluster for r in rows if r.decision == "expired"] == ["prod-us"]
    assert world.thread.outcomes(ActionResult)[-1].node_ref == f"prod-us/{NODE}"
