"""Faults at every step of every tier: a clear message, an audit row, state ``failed``, and
every change that did happen reported (never a silent half-application)."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import datetime

import pytest

from bot.core.model.changes import Change
from bot.core.remedies.field_changes import field_changes
from bot.core.reporting.outcomes import refused
from bot.errors import (
    ConflictError,
    ForbiddenError,
    KubeUnavailableError,
    TooManyRequestsError,
)
from bot.render.acting import _t
from bot.store import Store
from tests.services.world import APPROVER, CHANNEL, REQ, World

FAULTS: dict[str, Callable[[], BaseException]] = {
    "500": lambda: KubeUnavailableError("the API server failed (500)", status=500),
    "timeout": TimeoutError,
    "403": lambda: ForbiddenError("forbidden: gpunode may not do this; check RBAC", status=403),
    "409": lambda: ConflictError("the object was modified; retry", status=409),
    "429": lambda: TooManyRequestsError("too many requests; retry later", status=429),
}
# a real write that timed out may have landed: it is re-read, and one that did not land
# fails with "no_answer" (bot/services/settling.py)
CODES = {
    "500": "unavailable",
    "timeout": "no_answer",
    "403": "forbidden",
    "409": "conflict",
    "429": "too_many_requests",
}
# (tier, failing method, what already changed before it, what must be reported as not run)
STEPS = [
    (1, "cordon", [], ["annotate_node", "evict"]),
    (1, "annotate_node", ["cordon"], ["evict"]),
    (1, "evict", ["cordon", "annotate_node"], []),
    (2, "ensure_priority_class", [], ["set_priority_class"]),
    (2, "set_priority_class_name", ["ensure_priority_class"], []),
    (3, "patch_container_resources", [], []),
]
RECHECKS = [(1, "get_cluster_view"), (2, "read_controller"), (3, "read_controller")]


async def _run(world: World, tier: int) -> str:
    action_id = await world.request(tier, memory_limit="70Gi", memory_request="60Gi")
    await world.act.apply(action_id=action_id, user=REQ, channel=CHANNEL)
    if tier == 1:
        req = [m for m in world.chat.messages.values() if "Approval needed" in m.text]
        approval_id = req[0].blocks[-1]["elements"][0]["value"]
        await world.act.vote(approval_id=approval_id, user=APPROVER, channel=CHANNEL, yes=True)
    return action_id


@pytest.mark.parametrize("fault", sorted(FAULTS))
@pytest.mark.parametrize(("tier", "method", "done", "not_run"), STEPS)
async def test_a_fault_during_execution_is_reported_with_what_changed(
    world: World, tier: int, method: str, done: list[str], not_run: list[str], fault: str
) -> None:
    world.kube.fail(method, FAULTS[fault](), dry_run=False)
    action_id = await _run(world, tier)
    record = await world.store.get_action(action_id)
    assert record is not None and record.state == "failed"
    assert record.result is not None
    changed = [c["verb"] for c in record.result["changes"]]
    assert [v.replace("create_", "ensure_") for v in changed] == done
    if method == "evict":
        [first, *_rest] = record.result["evictions"]
        assert first["status"] == "failed"
    else:
        assert record.result["error"]["code"] == CODES[fault]
        assert [s["verb"] for s in record.result["not_run"]][: len(not_run)] == not_run
    msg = await world.action_message(action_id)
    shown = msg.text + json.dumps(msg.blocks)
    assert "Failed" in shown
    for change in record.result["changes"]:
        c = Change.model_validate(change)
        line = str(_t(locale="en").change_line(c, field_changes(c.before, c.after))).strip()
        assert json.dumps(line)[1:-1] in shown  # listed, in words
        assert "_" not in line.split("`")[0], line  # no raw verb such as set_priority_class
    if method != "evict":
        assert CODES[fault] in shown
    if not_run:
        assert "Not run" in shown
    rows = await world.store.audit_since(None)
    claimed, *between, row = [
        r for r in rows if r.action_id == action_id and r.action.endswith(".execute")
    ]
    assert claimed.decision == "claimed"
    expected = [("no_answer", "unknown"), ("reread", "not_landed")] if fault == "timeout" else []
    assert [(r.decision, r.outcome) for r in between] == expected
    assert row.decision == "failed" and isinstance(row.changes, dict)
    assert row.changes["changes"] == record.result["changes"]


@pytest.mark.parametrize("fault", sorted(FAULTS))
@pytest.mark.parametrize(("tier", "method"), RECHECKS)
async def test_a_fault_while_rechecking_fails_the_action_before_any_change(
    world: World, tier: int, method: str, fault: str
) -> None:
    await world.diagnosed()
    world.kube.fail(method, FAULTS[fault]())  # the next call: the re-read before acting
    action_id = await _run(world, tier)
    assert world.kube.effects() == []
    assert await world.state(action_id) == "failed"
    msg = await world.action_message(action_id)
    assert "Nothing was changed" in msg.text + json.dumps(msg.blocks)
    rows = [r for r in await world.store.audit_since(None) if r.action_id == action_id]
    assert rows[-1].decision == "failed" and rows[-1].outcome == "error"


@pytest.mark.parametrize("fault", sorted(FAULTS))
async def test_a_fault_during_the_dry_run_changes_nothing_and_offers_no_apply(
    world: World, fault: str
) -> None:
    world.kube.fail("patch_container_resources", FAULTS[fault](), dry_run=True)
    action_id = await world.request(3, memory_limit="70Gi", memory_request="60Gi")
    assert await world.state(action_id) == "refused"
    msg = await world.action_message(action_id)
    dry_codes = CODES | {"timeout": "timeout"}  # a dry run changes nothing: no re-read
    assert dry_codes[fault] in json.dumps(msg.blocks)
    await world.act.apply(action_id=action_id, user=REQ, channel=CHANNEL)
    assert world.kube.effects() == []


async def test_a_partly_applied_action_offers_undo_and_undo_restores_what_it_changed(
    world: World,
) -> None:
    # the node gets cordoned, then the evictions fail: the cordon must not be left stranded
    world.kube.fail("evict", FAULTS["500"](), dry_run=False)
    action_id = await _run(world, 1)
    record = await world.store.get_action(action_id)
    assert record is not None and record.state == "failed"
    undo = record.result["undo"]  # type: ignore[index]
    assert sorted(s["verb"] for s in undo) == ["annotate_node", "uncordon"]
    assert world.kube.node.annotations  # the scale-down protection is on
    msg = await world.action_message(action_id)
    assert "gpunode_undo" in json.dumps(msg.blocks)

    await world.act.undo(action_id=action_id, user=REQ, channel=CHANNEL)

    assert [c.method for c in world.kube.effects("uncordon")] == ["uncordon"]
    assert world.kube.node.annotations == {}  # removed: only what tier 1 added
    done = await world.store.get_action(action_id)
    assert done is not None and done.state == "undone"


async def test_a_failed_action_that_changed_nothing_offers_no_undo(world: World) -> None:
    world.kube.fail("cordon", FAULTS["403"](), dry_run=False)
    action_id = await _run(world, 1)
    msg = await world.action_message(action_id)
    assert "gpunode_undo" not in json.dumps(msg.blocks)


async def test_an_action_reconciled_by_another_replica_after_its_claim_never_runs(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two replicas on one store: the other one marks this replica's freshly claimed action
    interrupted (as a restart without a Lease did); the action must not execute after that."""
    action_id = await world.request(2, memory_limit="70Gi", memory_request="60Gi")
    claim = world.store.claim_action

    async def claimed_then_reconciled_elsewhere(aid: str, replica: str, *, at: datetime) -> bool:
        won = await claim(aid, replica, at=at)
        async with await Store.open(world.store.path) as other:  # the other replica
            await other.set_action_state(
                aid, "failed", at=at, result={"reason": "interrupted by a restart"}
            )
        return won

    monkeypatch.setattr(world.store, "claim_action", claimed_then_reconciled_elsewhere)

    await world.act.apply(action_id=action_id, user=REQ, channel=CHANNEL)

    assert world.kube.effects() == []
    record = await world.store.get_action(action_id)
    assert record is not None and record.state == "failed"
    rows = [r for r in await world.store.audit_since(None) if r.action_id == action_id]
    assert rows[-1].decision == "refused"
    assert rows[-1].detail == "action_marked_meanwhile state=failed"
    assert world.thread.refusals(REQ) == [refused("action_marked_meanwhile", state="failed")]
