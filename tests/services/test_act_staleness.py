"""A plan whose world moved since the evidence is refused with the reason; restarts are
reconciled."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest

from bot.render.acting import REDIAGNOSE
from bot.store.storing import Store
from tests.services.world import APPROVER, CHANNEL, MAX_AGE_S, REQ, World


def _cordon(w: World) -> None:
    w.kube.node = w.kube.node.model_copy(update={"unschedulable": True})


def _pod_gone(w: World) -> None:
    del w.kube.pods["ml/preprocess-7d9f8c6b5-x2k4q"]


def _limits_changed(w: World) -> None:
    c = w.kube.template_container("Deployment/ml/preprocess", "preprocess")
    c["resources"]["limits"]["memory"] = "80Gi"


def _controller_gone(w: World) -> None:
    del w.kube.controllers["StatefulSet/ml/train"]


def _priority_changed(w: World) -> None:
    spec = w.kube.controllers["StatefulSet/ml/train"]["spec"]["template"]["spec"]
    spec["priorityClassName"] = "someone-elses"


def _old(w: World) -> None:
    w.clock.advance(MAX_AGE_S + 60)


CASES: list[tuple[int, Callable[[World], None], str]] = [
    (1, _cordon, "was cordoned since"),
    (1, _pod_gone, "ml/preprocess-7d9f8c6b5-x2k4q is no longer on"),
    (2, _controller_gone, "StatefulSet/ml/train no longer exists"),
    (2, _priority_changed, "now uses priority class someone-elses"),
    (3, _limits_changed, "limits now cpu=16, memory=80Gi"),
    (3, _old, "min old"),
]


@pytest.mark.parametrize(("tier", "drift", "reason"), CASES)
async def test_a_stale_plan_is_refused_with_the_reason(
    world: World, tier: int, drift: Callable[[World], None], reason: str
) -> None:
    action_id = await world.request(tier, memory_limit="70Gi", memory_request="60Gi")
    drift(world)
    await world.act.apply(action_id=action_id, user=REQ, channel=CHANNEL)
    if tier == 1:
        req = [m for m in world.chat.messages.values() if "Approval needed" in m.text]
        approval_id = req[0].blocks[-1]["elements"][0]["value"]
        await world.act.vote(approval_id=approval_id, user=APPROVER, channel=CHANNEL, yes=True)
    assert world.kube.effects() == []
    assert await world.state(action_id) == "refused"
    msg = await world.action_message(action_id)
    assert reason in msg.text
    assert [a for a, _ in world.chat.buttons(msg.ts)] == [REDIAGNOSE]
    rows = [r for r in await world.store.audit_since(None) if r.action_id == action_id]
    assert (rows[-1].decision, rows[-1].outcome) == ("refused", "stale")
    assert reason in rows[-1].detail


async def test_a_plan_made_on_an_already_cordoned_node_is_not_stale_for_that(
    world: World,
) -> None:
    _cordon(world)
    action_id = await world.request(1)
    await world.act.apply(action_id=action_id, user=REQ, channel=CHANNEL)
    req = [m for m in world.chat.messages.values() if "Approval needed" in m.text]
    approval_id = req[0].blocks[-1]["elements"][0]["value"]
    await world.act.vote(approval_id=approval_id, user=APPROVER, channel=CHANNEL, yes=True)
    assert await world.state(action_id) == "succeeded"


async def test_actions_interrupted_by_a_restart_are_reported_by_the_next_process(
    world: World,
) -> None:
    claimed = await world.request(3, memory_limit="70Gi", memory_request="60Gi")
    running = await world.request(2)
    untouched = await world.request(3, memory_limit="71Gi", memory_request="60Gi")
    for action_id in (claimed, running):
        assert await world.store.claim_action(action_id, "replica-dead", at=world.clock())
    await world.store.set_action_state(running, "running", at=world.clock())

    restarted = await Store.open(world.store.path)
    world.extra.append(restarted)
    fresh = world.service(restarted, replica="replica-new")
    assert await fresh.reconcile_interrupted() == 2
    assert await fresh.reconcile_interrupted() == 0  # idempotent
    for action_id in (claimed, running):
        record = await restarted.get_action(action_id)
        assert record is not None and record.state == "failed"
        assert record.result is not None and "restart" in record.result["reason"]
    assert await world.state(untouched) == "requested"
    [root] = world.chat.roots()
    notes = [m.text for m in world.chat.thread(root.ts) if "interrupted by a restart" in m.text]
    assert len(notes) == 2 and "node gpu-node-01 schedulable" in notes[0]
    rows = [r for r in await restarted.audit_since(None) if r.decision == "interrupted"]
    assert sorted(r.action_id or "" for r in rows) == sorted([claimed, running])
    assert world.kube.effects() == []
    assert json.dumps([r.detail for r in rows])
