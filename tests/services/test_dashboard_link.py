"""With ``links.dashboard_url`` set, the evidence message links the node's dashboard for the
incident's window (from the first OOM kill in the evidence); unset, it carries no link."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from urllib.parse import parse_qs, urlsplit

import pytest

from bot.config import load_settings
from bot.core.model.thresholds import DEFAULT
from bot.core.reporting.links import dashboard_link, incident_window
from bot.errors import ConfigError
from bot.services.clusters import ClusterRegistry
from bot.services.diagnose import DiagnoseService
from tests.services.world import NODE, World

TEMPLATE = (
    "https://grafana.example.com/d/gpunode-node/gpunode-node-memory"
    "?var-node={node}&var-cluster={cluster}&from={from}&to={to}"
)


async def test_the_evidence_message_links_the_nodes_dashboard_for_the_window(
    world: World,
) -> None:
    world.diagnose = DiagnoseService(
        ClusterRegistry.single(world.kube),
        world.store,
        world.chat,
        thread=world.thread,
        clock=world.clock,
        thresholds=DEFAULT,
        dashboard_url=TEMPLATE,
    )
    outcome = await world.diagnosed()
    [root] = world.chat.roots()
    evidence = world.chat.thread(root.ts)[0]
    blocks = json.dumps(evidence.blocks)
    assert "|Dashboard> for this node" in blocks
    url = blocks.split("<https://grafana.example.com")[1].split("|")[0]
    query = parse_qs(urlsplit("https://x" + url).query)
    assert query["var-node"] == [NODE] and query["var-cluster"] == ["default"]
    assert outcome.diagnosis is not None
    start, end = int(query["from"][0]), int(query["to"][0])
    collected = outcome.diagnosis.collected_at.timestamp() * 1000
    assert start < collected - 3_600_000 + 1 and end > collected


async def test_without_a_dashboard_url_there_is_no_link(world: World) -> None:
    await world.diagnosed()
    [root] = world.chat.roots()
    assert "Dashboard>" not in json.dumps(world.chat.thread(root.ts)[0].blocks)


def test_values_are_encoded_and_the_window_covers_the_first_symptom() -> None:
    at = datetime(2026, 12, 1, 6, 0, tzinfo=UTC)
    start, end = incident_window(
        at, first_symptom=datetime(2026, 12, 1, 3, 0, tzinfo=UTC), history_start=None
    )
    assert start.hour == 3 and (end - at).total_seconds() == 600
    link = dashboard_link(TEMPLATE, node="gpu node/01", cluster="prod-eu", start=start, end=end)
    assert "var-node=gpu%20node%2F01&var-cluster=prod-eu" in link
    assert f"from={int(start.timestamp() * 1000)}&to={int(end.timestamp() * 1000)}" in link


@pytest.mark.parametrize(
    ("template", "says"),
    [
        ("https://g/d/x?var-pod={pod}", "names pod; only {cluster}, {from}, {node}, {to}"),
        ("grafana/d/x?var-node={node}", "is not an http(s) URL"),
        ("https://g/d/x?var-node={node", "stray brace"),
    ],
)
def test_a_bad_dashboard_url_is_refused_when_the_settings_load(template: str, says: str) -> None:
    with pytest.raises(ConfigError, match=r"links\.dashboard_url") as err:
        load_settings({"GPUNODE_LINKS__DASHBOARD_URL": template})
    assert says in str(err.value)
