"""The role check every chat request passes is closed by default: no policy, no access."""

from __future__ import annotations

import pytest

from bot.core.governance.policy import Permission
from bot.core.model.clusters import DEFAULT_CLUSTER
from bot.core.reporting.outcomes import refused
from bot.services.chatops import NO_POLICY, denied, permitted
from tests.services.world import CHANNEL, REQ, STRANGER, VIEWER, World, bot_services

PERMISSIONS: list[Permission] = ["view", "diagnose", "resolve"]


@pytest.mark.parametrize("permission", PERMISSIONS)
async def test_without_the_action_service_every_request_is_refused_told_and_audited(
    world: World, permission: Permission
) -> None:
    s = bot_services(world, with_actions=False)
    assert not await permitted(
        s, permission, user=REQ, channel=CHANNEL, cluster=DEFAULT_CLUSTER, thread_ts="1.0"
    )
    assert world.thread.said == [(CHANNEL, REQ, refused("no_policy"))]
    told = world.chat.ephemerals[-1]
    assert (told.user, told.channel, told.thread_ts) == (REQ, CHANNEL, "1.0")
    rows = [r for r in await world.store.audit_since() if r.actor == REQ]
    assert [(r.action, r.decision, r.detail) for r in rows] == [(permission, "denied", NO_POLICY)]


async def test_without_the_action_service_denied_answers_with_a_refusal(world: World) -> None:
    refusal = await denied(
        bot_services(world, with_actions=False), "view", user=REQ, channel=CHANNEL, cluster=None
    )
    assert refusal is not None and refusal.reason == NO_POLICY


@pytest.mark.parametrize(
    ("user", "permission", "allowed"),
    [
        (REQ, "diagnose", True),
        (VIEWER, "diagnose", True),
        (STRANGER, "diagnose", False),
        (STRANGER, "view", False),
    ],
)
async def test_with_a_policy_permitted_follows_the_users_binding(
    world: World, user: str, permission: Permission, allowed: bool
) -> None:
    s = bot_services(world, with_actions=True)
    assert (
        await permitted(s, permission, user=user, channel=CHANNEL, cluster=DEFAULT_CLUSTER)
        is allowed
    )
    assert (
        await denied(s, permission, user=user, channel=CHANNEL, cluster=DEFAULT_CLUSTER) is None
    ) is allowed
