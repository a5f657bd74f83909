"""The Re-diagnose button's value names the node as ``[CLUSTER/]NODE``: pressed, it diagnoses
that node in that cluster (no cluster: the default one), after the role check; a cluster no
longer served is told and audited as a damaged button, and nothing is diagnosed."""

from __future__ import annotations

from bot.core.model.clusters import DEFAULT_CLUSTER
from bot.slack.interactions import _rediagnose
from tests.services.world import CHANNEL, NODE, REQ, STRANGER, World, bot_services


async def test_the_button_diagnoses_the_node_in_the_cluster_it_names(world: World) -> None:
    for value in (NODE, f"{DEFAULT_CLUSTER}/{NODE}"):
        await _rediagnose(bot_services(world), value, user=REQ, channel=CHANNEL)

    [incident] = await world.store.open_incidents()
    assert (incident.cluster, incident.node) == (DEFAULT_CLUSTER, NODE)
    assert [c.method for c in world.kube.calls].count("run_diagnostic") == 2


async def test_a_cluster_no_longer_served_is_told_and_nothing_is_diagnosed(world: World) -> None:
    await _rediagnose(bot_services(world), f"prod-gone/{NODE}", user=REQ, channel=CHANNEL)
    await world.bg.drain()

    assert await world.store.open_incidents() == []
    assert world.kube.calls == []
    rows = [r for r in await world.store.audit_since() if r.actor == REQ]
    assert [(r.action, r.outcome) for r in rows] == [("slack.rediagnose", "malformed_request")]


async def test_the_role_is_checked_before_anything_runs(world: World) -> None:
    await _rediagnose(bot_services(world), NODE, user=STRANGER, channel=CHANNEL)

    assert await world.store.open_incidents() == []
    assert world.kube.calls == []
