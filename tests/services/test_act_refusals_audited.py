"""Refusals of stale or foreign plans and actions leave an audit row (who tried what)."""

from __future__ import annotations

from tests.services.world import CHANNEL, REQ, World

EDITS = {"memory_limit": "70Gi", "memory_request": "60Gi"}


async def _refusals(world: World, user: str) -> list[tuple[str, str, str]]:
    rows = await world.store.audit_since(None)
    return [(r.action, r.decision, r.outcome) for r in rows if r.actor == user]


async def test_a_tier_button_of_a_plan_that_is_no_longer_current_is_refused_and_audited(
    world: World,
) -> None:
    await world.diagnosed()

    await world.act.open_confirmation(
        tier=3,
        incident_id="INC-0001",
        plan_id="plan-from-an-older-diagnosis",
        user=REQ,
        channel=CHANNEL,
        trigger_id="T1",
    )

    assert world.chat.views == []
    assert ("tier3.request", "refused", "not_current") in await _refusals(world, REQ)


async def test_a_modal_naming_another_incidents_plan_is_refused_and_audited(world: World) -> None:
    await world.diagnosed()
    meta = {"incident": "INC-0099", "plan_id": "p", "tier": 3, "channel": CHANNEL}

    plan, errors = await world.act.validate_submission(meta, {"reason": "forged"} | EDITS, user=REQ)

    assert plan is None and "no longer current" in errors["reason"]
    assert ("request", "refused", "not_current") in await _refusals(world, REQ)


async def test_cancel_of_an_unknown_action_is_refused_and_audited(world: World) -> None:
    await world.act.cancel(action_id="not-an-action", user=REQ, channel=CHANNEL)

    assert ("cancel", "refused", "unknown") in await _refusals(world, REQ)
