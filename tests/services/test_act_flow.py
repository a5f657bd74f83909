"""Tier buttons end to end: edit -> dry run -> apply -> audit -> undo; roles at each click."""

from __future__ import annotations

import contextlib
from typing import Any

from bot.core.remedies.field_changes import field_changes
from bot.core.reporting.outcomes import ActionDiff, ActionForm, ActionResult, Diagnosed, DryRun
from bot.render.acting import APPLY, CANCEL, REDIAGNOSE, UNDO
from tests.services.world import CHANNEL, REQ, REQ2, STRANGER, VIEWER, World

PRE = "Deployment/ml/preprocess"
EDITS: dict[str, Any] = {
    "memory_limit": "70Gi",
    "memory_request": "60Gi",
    "cpu_limit": "6",
    "cpu_request": "4",
    "omp_num_threads": "6",
}


async def test_tier3_dry_runs_exactly_the_edited_values_and_changes_nothing(world: World) -> None:
    await world.diagnosed()
    action_id = await world.request(3, **EDITS)
    assert world.kube.effects() == []
    [dry] = world.kube.mutating_calls()
    assert dry.dry_run is True and dry.method == "patch_container_resources"
    assert dry.kwargs["limits"] == {"memory": "70Gi", "cpu": "6"}
    assert dry.kwargs["requests"] == {"memory": "60Gi", "cpu": "4"}
    assert dry.kwargs["env"] == {"OMP_NUM_THREADS": "6"}
    msg = await world.action_message(action_id)
    assert (APPLY, action_id) in world.chat.buttons(msg.ts)
    assert (CANCEL, action_id) in world.chat.buttons(msg.ts)
    assert world.kube.template_container(PRE, "preprocess")["resources"]["limits"]["memory"] == (
        "64Gi"
    )
    [form] = world.thread.outcomes(ActionForm)
    assert form.plan.tier == 3 and form.meta["tier"] == 3
    [shown] = world.thread.outcomes(DryRun)
    assert (shown.action_id, shown.requester, shown.reason) == (
        action_id,
        REQ,
        "node is falling over",
    )
    assert shown.result.ok and not shown.all_blocked and not shown.awaiting
    [change] = shown.result.changes
    assert change.dry_run and {
        (f.field, f.after) for f in field_changes(change.before, change.after)
    } >= {
        ("resources.limits.memory", "70Gi"),
        ("resources.requests.memory", "60Gi"),
    }


async def test_tier3_apply_sends_the_edited_values_audits_and_undo_restores(world: World) -> None:
    await world.diagnosed()
    action_id = await world.request(3, **EDITS)
    await world.act.apply(action_id=action_id, user=REQ, channel=CHANNEL)
    [call] = world.kube.effects()
    assert call.kwargs["limits"] == {"memory": "70Gi", "cpu": "6"}
    assert call.kwargs["requests"] == {"memory": "60Gi", "cpu": "4"}
    res = world.kube.template_container(PRE, "preprocess")["resources"]
    assert res == {
        "requests": {"memory": "60Gi", "cpu": "4"},
        "limits": {"memory": "70Gi", "cpu": "6"},
    }
    assert await world.state(action_id) == "succeeded"
    msg = await world.action_message(action_id)
    assert world.chat.buttons(msg.ts) == [(UNDO, action_id)]
    shown = world.thread.outcomes(ActionResult)
    assert [r.state for r in shown] == ["applying", "succeeded"]
    assert shown[-1].undo and shown[-1].result is not None
    [change] = shown[-1].result.changes
    assert (change.kind, change.name, change.dry_run) == ("Deployment", "preprocess", False)
    incident = await world.store.get_incident("INC-0001")
    assert incident is not None and incident.state == "mitigating"

    await world.act.undo(action_id=action_id, user=REQ2, channel=CHANNEL)
    res = world.kube.template_container(PRE, "preprocess")["resources"]
    assert res == {
        "requests": {"memory": "48Gi", "cpu": "8"},
        "limits": {"memory": "64Gi", "cpu": "16"},
    }
    env = world.kube.template_container(PRE, "preprocess").get("env", [])
    assert env == []  # OMP_NUM_THREADS was unset before: removed again
    assert await world.state(action_id) == "undone"
    assert [d for _, a, d in await world.audit(action_id)] == [
        "allowed",
        "claimed",
        "executed",
        "undone",
    ]
    # a second undo is refused and sends nothing
    calls = len(world.kube.effects())
    await world.act.undo(action_id=action_id, user=REQ, channel=CHANNEL)
    assert len(world.kube.effects()) == calls
    assert world.thread.outcomes(ActionResult)[-1].state == "undone"
    await world.bg.drain()
    # what the action bought is posted as a before/after; the evidence is posted once
    [diff] = world.thread.outcomes(ActionDiff)
    assert diff.incident_id == "INC-0001" and diff.diff.node == incident.node
    assert len(world.thread.outcomes(Diagnosed)) == 1
    assert world.thread.edited_states == 1  # the re-diagnosis wrote over the current state


async def test_an_edit_below_the_working_set_needs_the_oom_acknowledgement(world: World) -> None:
    await world.diagnosed()
    incident = (await world.store.open_incidents())[0]
    snap = await world.store.latest_snapshot(incident.id)
    assert snap is not None
    import json

    plan_id = next(p["plan_id"] for p in json.loads(snap.diagnosis_json)["plans"] if p["tier"] == 3)
    meta = {"incident": incident.id, "plan_id": plan_id, "tier": 3, "channel": CHANNEL}
    values = {"reason": "cap it", "memory_limit": "40Gi", "memory_request": "30Gi"}
    plan, errors = await world.act.validate_submission(meta, values)
    assert plan is None and "accept_oom" in errors
    plan, errors = await world.act.validate_submission(meta, values | {"accept_oom": True})
    assert plan is not None and errors == {}
    assert plan.values is not None and plan.values.below_working_set


async def test_a_user_without_a_role_is_refused_audited_and_nothing_is_called(world: World) -> None:
    await world.diagnosed()
    incident = (await world.store.open_incidents())[0]
    snap = await world.store.latest_snapshot(incident.id)
    assert snap is not None
    import json

    plan_id = next(p["plan_id"] for p in json.loads(snap.diagnosis_json)["plans"] if p["tier"] == 3)
    before = len(world.kube.calls)
    for user in (STRANGER, VIEWER):
        await world.act.open_confirmation(
            tier=3,
            incident_id=incident.id,
            plan_id=plan_id,
            user=user,
            channel=CHANNEL,
            trigger_id="T",
        )
        assert world.chat.views == []
        (why,) = world.thread.refusals(user)
        assert (why.code, why.params["roles"]) == ("role_needed", ["responder"])
    assert len(world.kube.calls) == before
    rows = await world.audit()
    assert (STRANGER, "tier3.request", "refused") in rows
    assert (VIEWER, "tier3.request", "refused") in rows


async def test_only_the_requester_may_apply_and_others_are_audited(world: World) -> None:
    action_id = await world.request(3, **EDITS)
    await world.act.apply(action_id=action_id, user=REQ2, channel=CHANNEL)
    await world.act.apply(action_id=action_id, user=STRANGER, channel=CHANNEL)
    assert world.kube.effects() == []
    assert await world.state(action_id) == "requested"
    rows = await world.audit(action_id)
    assert (REQ2, "tier3.apply", "refused") in rows and (STRANGER, "tier3.apply", "refused") in rows


async def test_cancel_ends_the_request_and_apply_afterwards_does_nothing(world: World) -> None:
    action_id = await world.request(3, **EDITS)
    await world.act.cancel(action_id=action_id, user=REQ, channel=CHANNEL)
    await world.act.apply(action_id=action_id, user=REQ, channel=CHANNEL)
    assert world.kube.effects() == []
    assert await world.state(action_id) == "refused"
    msg = await world.action_message(action_id)
    assert world.chat.buttons(msg.ts) == []
    assert world.thread.outcomes(ActionResult)[-1].state == "cancelled"


async def test_a_failed_dry_run_closes_the_request_without_an_apply_button(world: World) -> None:
    from bot.errors import InvalidObjectError

    world.kube.fail(
        "patch_container_resources",
        InvalidObjectError("spec.template: memory limit too small"),
        dry_run=True,
    )
    action_id = await world.request(3, **EDITS)
    msg = await world.action_message(action_id)
    assert [a for a, _ in world.chat.buttons(msg.ts)] == [REDIAGNOSE]
    assert await world.state(action_id) == "refused"
    await world.act.apply(action_id=action_id, user=REQ, channel=CHANNEL)
    assert world.kube.effects() == []
    rows = await world.audit(action_id)
    assert rows[0][2] == "allowed"
    stored = await world.store.audit_since(None)
    assert any(r.outcome == "dry_run_failed" for r in stored)


async def test_tier2_sets_the_priority_class_and_undo_removes_it(world: World) -> None:
    action_id = await world.request(2)
    await world.act.apply(action_id=action_id, user=REQ, channel=CHANNEL)
    methods = [c.method for c in world.kube.effects()]
    assert methods == ["ensure_priority_class", "set_priority_class_name"]
    spec = world.kube.controllers["StatefulSet/ml/train"]["spec"]["template"]["spec"]
    assert spec["priorityClassName"] == "gpunode-critical-training"
    await world.act.undo(action_id=action_id, user=REQ, channel=CHANNEL)
    assert "priorityClassName" not in spec or spec.get("priorityClassName") is None
    assert await world.state(action_id) == "undone"


async def test_the_audit_rows_written_by_the_flow_cannot_be_changed(world: World) -> None:
    import sqlite3

    action_id = await world.request(3, **EDITS)
    await world.act.apply(action_id=action_id, user=REQ, channel=CHANNEL)
    conn = sqlite3.connect(world.store.path)
    try:
        for sql in ("UPDATE audit SET decision='allowed'", "DELETE FROM audit"):
            try:
                conn.execute(sql)
                conn.commit()
                raise AssertionError(f"{sql} was accepted")
            except sqlite3.DatabaseError as err:
                assert "append-only" in str(err)
    finally:
        conn.close()
    assert [d for _, _, d in await world.audit(action_id)] == ["allowed", "claimed", "executed"]


class Killed(BaseException):
    """A process killed mid-apply (``kill -9``): no handler in the bot runs."""


async def test_who_pressed_apply_is_audited_before_anything_runs(world: World) -> None:
    action_id = await world.request(3, **EDITS)
    world.kube.fail("patch_container_resources", Killed(), dry_run=False)

    with contextlib.suppress(Killed):
        await world.act.apply(action_id=action_id, user=REQ, channel=CHANNEL)

    assert await world.audit(action_id) == [
        (REQ, "tier3.dry_run", "allowed"),
        (REQ, "tier3.execute", "claimed"),
    ]
    assert await world.state(action_id) == "running"


async def test_apply_removes_the_dry_run_buttons_before_the_changes_are_sent(
    world: World,
) -> None:
    action_id = await world.request(3, **EDITS)
    world.kube.fail("patch_container_resources", Killed(), dry_run=False)

    with contextlib.suppress(Killed):
        await world.act.apply(action_id=action_id, user=REQ, channel=CHANNEL)

    msg = await world.action_message(action_id)
    assert world.chat.buttons(msg.ts) == []
    assert world.thread.outcomes(ActionResult)[-1].state == "applying"


async def test_after_a_crash_mid_apply_the_restart_shows_the_outcome_on_the_message(
    world: World,
) -> None:
    action_id = await world.request(3, **EDITS)
    world.kube.fail("patch_container_resources", Killed(), dry_run=False)
    with contextlib.suppress(Killed):
        await world.act.apply(action_id=action_id, user=REQ, channel=CHANNEL)

    restarted = world.service(world.store, replica="replica-b")
    assert await restarted.reconcile_interrupted() == 1

    msg = await world.action_message(action_id)
    last = world.thread.outcomes(ActionResult)[-1]
    assert last.state == "failed" and last.failure is not None
    assert last.failure.code == "interrupted"
    assert world.chat.buttons(msg.ts) == []
    assert (REQ, "tier3.execute", "claimed") in await world.audit(action_id)
