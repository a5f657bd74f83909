"""status/timeline/resolve, and the Alertmanager intake (each alert acted on once)."""

from __future__ import annotations

import json

import pytest

from bot.errors import UsageError
from bot.services.alerts import AlertService, parse_payload
from bot.services.operations import IncidentOps, top_nodes
from tests.services.world import CHANNEL, NODE, REQ, World


async def test_resolve_records_one_timeline_entry_and_refuses_twice(world: World) -> None:
    await world.diagnosed()
    ops = IncidentOps(world.store, clock=world.clock, clusters=world.diagnose.clusters)
    resolved = await ops.resolve("INC-0001", by=REQ, note="limits fixed")
    assert resolved.state == "resolved"
    entries = [e for e in await ops.timeline("INC-0001") if e.kind == "resolved"]
    assert len(entries) == 1 and entries[0].actor == REQ
    with pytest.raises(UsageError):
        await ops.resolve("INC-0001", by=REQ, note="")
    assert await ops.status(None) == []


async def test_top_ranks_the_loaded_node_before_one_with_nothing_measured(world: World) -> None:
    ranks = await top_nodes(world.kube)
    assert [r.node for r in ranks] == [NODE, "gpu-node-02"]
    assert ranks[0].score > ranks[1].score
    assert [c.method for c in world.kube.calls] == ["gpu_node_loads"]  # one fleet read


def _payload(
    status: str, *, node: str | None = NODE, starts: str = "2026-03-14T09:00:00Z"
) -> bytes:
    labels = {"alertname": "GpunodeMemoryAvailableLow"} | ({"node": node} if node else {})
    alert = {"status": status, "labels": labels, "startsAt": starts, "fingerprint": "f1"}
    return json.dumps(
        {"version": "4", "groupKey": "g", "status": status, "alerts": [alert]}
    ).encode()


async def test_a_firing_alert_diagnoses_once_however_often_it_is_resent(world: World) -> None:
    alerts = AlertService(
        world.diagnose, world.store, world.chat, world.bg, channel=CHANNEL, clock=world.clock
    )
    first = await alerts.intake(parse_payload(_payload("firing")))
    again = await alerts.intake(parse_payload(_payload("firing")))
    await world.bg.drain()
    assert first.diagnosing == [NODE] and again.duplicates == 1
    assert len(world.chat.roots()) == 1
    incident = (await world.store.open_incidents())[0]
    assert incident.opened_by == "alertmanager"
    done = await alerts.intake(parse_payload(_payload("resolved")))
    assert done.resolved == [NODE]
    assert any("resolved" in m.text for m in world.chat.thread(incident.thread_ts or ""))


async def test_alerts_without_a_node_label_are_ignored(world: World) -> None:
    alerts = AlertService(
        world.diagnose, world.store, world.chat, world.bg, channel=CHANNEL, clock=world.clock
    )
    result = await alerts.intake(parse_payload(_payload("firing", node=None)))
    assert result.ignored == 1 and world.chat.messages == {}


def test_a_payload_of_another_version_is_refused() -> None:
    with pytest.raises(UsageError, match="version"):
        parse_payload(b'{"version": "3", "groupKey": "g", "status": "firing", "alerts": []}')
