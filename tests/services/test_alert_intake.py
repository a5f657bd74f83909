"""The Alertmanager intake trusts nothing in a payload: labels are validated, unknown nodes
are answered and audited, and diagnoses are capped per request, per node and per window."""

from __future__ import annotations

import json
import logging
from typing import Any

import pytest

from bot.core.governance.alert_caps import AlertCaps
from bot.errors import SlackError
from bot.services.alerts import AlertService, parse_payload
from tests.services.world import CHANNEL, NODE, World

CAPS = AlertCaps(per_request=2, per_node=1, per_window=3, window_s=600)
FLEET = tuple(f"gpu-node-{i:02d}" for i in range(2, 51))


def payload(*alerts: dict[str, Any], status: str = "firing") -> Any:
    return parse_payload(
        json.dumps(
            {"version": "4", "groupKey": "g", "status": status, "alerts": list(alerts)}
        ).encode()
    )


def alert(node: str, *, name: str = "GpunodeMemoryAvailableLow", status: str = "firing") -> Any:
    return {
        "status": status,
        "labels": {"alertname": name, "node": node},
        "startsAt": "2026-03-14T09:00:00Z",
        "fingerprint": f"{name}:{node}",
    }


def service(world: World, caps: AlertCaps = CAPS) -> AlertService:
    return AlertService(
        world.diagnose,
        world.store,
        world.chat,
        world.bg,
        channel=CHANNEL,
        clock=world.clock,
        check_nodes=True,
        caps=caps,
    )


async def audit_rows(world: World) -> list[tuple[str, str, str]]:
    rows = await world.store.audit_since(None)
    return [(r.decision, r.outcome, r.detail) for r in rows if r.actor == "alertmanager"]


def skipped_notices(world: World) -> list[str]:
    return [m.text for m in world.chat.messages.values() if "were skipped" in m.text]


@pytest.mark.parametrize(
    "label",
    [
        "gpu-node-01\n2026-12-01 10:00:00 CRITICAL gpunode forged line",
        "gpu-node-01\r",
        "GPU-NODE-01",
        "gpu_node_01",
        "../../etc/passwd",
        "-gpu-node",
        "a" * 254,
        "gpu-node-01 ",
        "<!channel>",
    ],
    ids=[
        "newline",
        "carriage-return",
        "uppercase",
        "underscore",
        "path",
        "leading-dash",
        "too-long",
        "trailing-space",
        "mention",
    ],
)
async def test_a_node_label_that_is_not_a_kubernetes_name_is_refused_and_audited(
    world: World, label: str
) -> None:
    result = await service(world).intake(payload(alert(label)))
    await world.bg.drain()

    assert result.diagnosing == [] and len(result.refused) == 1
    assert "\n" not in result.refused[0]["node"] and "\r" not in result.refused[0]["node"]
    assert len(result.refused[0]["node"]) <= 80
    assert world.chat.messages == {} and world.kube.calls == []
    [(decision, outcome, _)] = await audit_rows(world)
    assert (decision, outcome) == ("refused", "invalid_node_label")


async def test_an_alert_for_an_unknown_node_is_answered_and_audited_without_a_traceback(
    world: World, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.INFO):
        result = await service(world).intake(payload(alert("gpu-node-99")))
        await world.bg.drain()

    assert result.unknown_nodes == ["gpu-node-99"] and result.diagnosing == []
    assert await world.store.open_incidents() == []
    assert world.chat.messages == {} and world.chat.ephemerals == []
    assert [(d, o) for d, o, _ in await audit_rows(world)] == [("refused", "unknown_node")]
    assert "gpu-node-99" in (await audit_rows(world))[0][2]
    assert [r for r in caplog.records if r.levelno >= logging.WARNING or r.exc_info] == []
    assert world.bg.errors == []


async def test_fifty_alerts_in_one_request_start_at_most_the_cap_and_say_so_once(
    world: World,
) -> None:
    world.kube.extra_nodes = FLEET
    alerts = [alert(NODE)] + [alert(n) for n in FLEET]

    result = await service(world).intake(payload(*alerts))
    await world.bg.drain()

    assert result.diagnosing == [NODE, FLEET[0]]
    assert len(result.skipped) == 48
    assert {s["cap"] for s in result.skipped} == {"per_request"}
    [notice] = skipped_notices(world)
    assert FLEET[1] in notice and "and 28 more" in notice
    assert ("skipped", "over_cap") in [(d, o) for d, o, _ in await audit_rows(world)]
    assert [c.method for c in world.kube.calls].count("run_diagnostic") == 1  # 02 is absent


async def test_a_node_is_diagnosed_once_per_window_whatever_the_alerts(world: World) -> None:
    alerts = service(world)
    first = await alerts.intake(payload(alert(NODE), alert(NODE, name="GpunodeSwapping")))
    later = await alerts.intake(payload(alert(NODE, name="GpunodeOOMKills")))
    world.clock.advance(CAPS.window_s + 1)
    after_window = await alerts.intake(payload(alert(NODE, name="GpunodeKernelSlab")))
    await world.bg.drain()

    assert first.diagnosing == [NODE] and [s["cap"] for s in first.skipped] == ["per_node"]
    assert later.diagnosing == [] and [s["cap"] for s in later.skipped] == ["per_node"]
    assert after_window.diagnosing == [NODE]
    assert len(skipped_notices(world)) == 2  # one per request that skipped something


async def test_the_window_caps_diagnoses_across_requests(world: World) -> None:
    world.kube.extra_nodes = FLEET
    alerts = service(world, AlertCaps(per_request=5, per_node=1, per_window=2, window_s=600))
    one = await alerts.intake(payload(alert(NODE)))
    two = await alerts.intake(payload(alert(FLEET[0]), alert(FLEET[1])))
    await world.bg.drain()

    assert one.diagnosing == [NODE]
    assert two.diagnosing == [FLEET[0]]
    assert [(s["node"], s["cap"]) for s in two.skipped] == [(FLEET[1], "per_window")]


async def test_a_repeated_alert_is_a_duplicate_not_a_skip(world: World) -> None:
    alerts = service(world)
    await alerts.intake(payload(alert(NODE)))
    again = await alerts.intake(payload(alert(NODE)))
    await world.bg.drain()

    assert (again.duplicates, again.skipped) == (1, [])
    assert skipped_notices(world) == []


async def test_a_channel_the_bot_is_not_in_is_logged_once_and_reported_in_responses(
    world: World, caplog: pytest.LogCaptureFixture
) -> None:
    alerts = service(world)
    world.chat.post_failures += [
        SlackError("Slack chat.postMessage failed", code="not_in_channel") for _ in range(2)
    ]
    with caplog.at_level(logging.INFO):
        await alerts.intake(payload(alert(NODE)))
        await world.bg.drain()
        world.clock.advance(CAPS.window_s + 1)
        second = await alerts.intake(payload(alert(NODE, name="GpunodeSwapping")))
        await world.bg.drain()

    errors = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert len(errors) == 1 and "/invite" in errors[0].getMessage()
    assert errors[0].exc_info is None
    assert second.problem == "not_in_channel"
    assert world.bg.errors == []
