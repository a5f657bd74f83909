"""Two clusters end to end: the real bot over HTTP between the Slack stand-in and two
Kubernetes stand-ins (prod-eu: seed, prod-us: slab-leak), as ``gpunode demo`` runs them."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from gpunode_sandbox.demo import Demo, running_demo
from gpunode_sandbox.story import ALICE, CHANNEL, find_button
from gpunode_sandbox.story_clusters import ERIN, run_clusters_story
from tests.e2e.conftest import ephemeral_texts, incident_roots, text_of, thread

REFUSED = (
    "this is cluster prod-us and your role does not cover it (sre-eu applies in prod-eu "
    "only); ask an admin for a role in prod-us"
)


@pytest.fixture
async def two() -> AsyncIterator[Demo]:
    async with running_demo("seed", second="slab-leak") as d:
        yield d


async def _diagnose(demo: Demo, ref: str, shown: str | None = None) -> str:
    """``/gpunode diagnose ref``; the thread whose root names the node as ``shown``."""
    result = await demo.slack.slash_command(ALICE, CHANNEL, f"diagnose {ref}")
    assert result.status == 200, result.body
    await demo.drain()
    roots = [m for m in incident_roots(demo.slack) if f"`{shown or ref}`" in text_of(m)]
    assert roots, f"no incident thread for {ref}"
    return str(roots[-1]["ts"])


async def _click(demo: Demo, root_ts: str, user: str, action_id: str) -> None:
    found = find_button(thread(demo, root_ts), action_id)
    assert found is not None, f"no {action_id} button"
    ts, button = found
    result = await demo.slack.click(user, CHANNEL, ts, action_id, value=button.get("value"))
    assert result.status == 200, result.body
    await demo.drain()


async def test_a_click_by_a_prod_eu_only_sre_on_a_prod_us_incident_is_refused_clearly(
    two: Demo,
) -> None:
    us = await _diagnose(two, "prod-us/gpu-node-01")
    eu = await _diagnose(two, "prod-eu/gpu-node-01")

    await _click(two, us, ERIN, "gpunode_tier2")
    refused_views = list(two.slack.open_views(ERIN))
    await _click(two, eu, ERIN, "gpunode_tier2")  # her own cluster: the modal opens

    assert refused_views == []
    assert any(REFUSED in t for t in ephemeral_texts(two.slack, ERIN))
    assert len(two.slack.open_views(ERIN)) == 1
    audit = await two.runtime.store.audit_since()
    denied = [a for a in audit if a.actor == ERIN and a.decision == "refused"]
    assert [(a.action, a.cluster, a.detail) for a in denied] == [
        ("tier2.request", "prod-us", REFUSED)
    ]
    incidents = {i.cluster: i for i in await two.runtime.store.open_incidents()}
    assert sorted(incidents) == ["prod-eu", "prod-us"]
    assert incidents["prod-us"].node == incidents["prod-eu"].node == "gpu-node-01"


@pytest.mark.parametrize(
    ("text", "says"),
    [
        (
            "diagnose prod-ap/gpu-node-01",
            "no cluster named 'prod-ap'; the known clusters are: prod-eu, prod-us",
        ),
        ("diagnose Prod-EU/gpu-node-01", "cluster names are lowercase: did you mean prod-eu?"),
        ("top prod-ap", "no cluster named 'prod-ap'"),
    ],
)
async def test_a_slash_command_naming_an_unknown_cluster_is_answered_in_the_ack(
    two: Demo, text: str, says: str
) -> None:
    result = await two.slack.slash_command(ALICE, CHANNEL, text)
    await two.drain()

    assert result.status == 200
    assert says in result.body
    assert incident_roots(two.slack) == []


async def test_status_names_each_incidents_cluster_and_filters_by_cluster(two: Demo) -> None:
    await _diagnose(two, "prod-us/gpu-node-01")
    await _diagnose(two, "gpu-node-01", "prod-eu/gpu-node-01")  # the default cluster

    every = await two.slack.slash_command(ALICE, CHANNEL, "status")
    us_only = await two.slack.slash_command(ALICE, CHANNEL, "status prod-us/gpu-node-01")

    assert "prod-us/gpu-node-01" in every.body and "prod-eu/gpu-node-01" in every.body
    assert "prod-us/gpu-node-01" in us_only.body and "prod-eu/" not in us_only.body


async def test_status_of_a_cluster_outside_the_users_scope_is_refused_as_top_is(
    two: Demo,
) -> None:
    await _diagnose(two, "prod-us/gpu-node-01")

    status = await two.slack.slash_command(ERIN, CHANNEL, "status prod-us/gpu-node-01")
    own = await two.slack.slash_command(ERIN, CHANNEL, "status prod-eu/gpu-node-01")
    await two.slack.slash_command(ERIN, CHANNEL, "top prod-us")
    await two.drain()

    assert status.status == 200
    assert "prod-us/gpu-node-01" not in status.body
    assert "your role does not cover it" in status.body
    assert "your role does not cover it" not in own.body
    assert any("your role does not cover it" in t for t in ephemeral_texts(two.slack, ERIN))


async def test_the_prevention_kit_button_checks_the_users_scope_in_the_incidents_cluster(
    two: Demo,
) -> None:
    us = await _diagnose(two, "prod-us/gpu-node-01")
    eu = await _diagnose(two, "prod-eu/gpu-node-01")
    files_before = len(two.slack.files(CHANNEL))

    await _click(two, us, ERIN, "gpunode_prevention")  # prod-us: not hers
    refused_files = len(two.slack.files(CHANNEL))
    await _click(two, eu, ERIN, "gpunode_prevention")  # prod-eu: hers

    assert refused_files == files_before
    assert any(REFUSED in t for t in ephemeral_texts(two.slack, ERIN))
    assert len(two.slack.files(CHANNEL)) > files_before
    audit = [a for a in await two.runtime.store.audit_since() if a.actor == ERIN]
    assert [(a.action, a.decision, a.cluster) for a in audit] == [
        ("view", "denied", "prod-us"),
        ("prevention_kit.upload", "shared", "prod-eu"),
    ]


@pytest.mark.slow
async def test_the_two_cluster_demo_story_runs_end_to_end(two: Demo) -> None:
    assert two.kubes is not None
    log = await run_clusters_story(
        two.slack, two.drain, two.kubes, first="prod-eu", second="prod-us"
    )

    assert log.steps[:3] == [
        "top ranked the GPU nodes of prod-eu and prod-us together",
        f"diagnosed prod-us/gpu-node-01: thread {log.us_thread}",
        "Erin's click on the prod-us incident was refused: her role is prod-eu's",
    ]
    # tier 3 gives the seed node's shortage back: tier 1 is then not offered
    assert log.eu is not None
    assert log.steps[3:7] == [
        f"prod-eu: diagnosed prod-eu/gpu-node-01: thread {log.eu.thread_ts}",
        "prod-eu: tier 3: the limit was below the working set; OOM accepted explicitly",
        "prod-eu: tier 3 applied",
        "prod-eu: tier 1 not offered: the node is no longer at risk, nothing to do",
    ]
    assert not any("tier 1 approved" in step for step in log.steps)
    assert log.steps[-1].endswith("with prod-eu's rows and named prod-us as left out")
    store = two.runtime.store
    actions = [
        a for i in await store.open_incidents() for a in await store.actions_for_incident(i.id)
    ]
    assert actions and {a.cluster for a in actions} == {"prod-eu"}
    assert {a.tier for a in actions} == {3}
    # every execution ran against prod-eu's API server, none against prod-us': tier 3's cap
    # patches prod-eu's preprocess Deployment; tier 1 did not run, so nothing was evicted
    writes = {
        name: [(m, p) for m, p, _q in sim.requests if m == "PATCH" or "/eviction" in p]
        for name, sim in two.kubes.items()
    }
    assert writes["prod-eu"] and not writes["prod-us"]
    assert {p for _m, p in writes["prod-eu"]} == {
        "/apis/apps/v1/namespaces/data-prep/deployments/preprocess"
    }
    assert (await store.verify_audit()).ok


@pytest.mark.parametrize(
    ("ref", "requests_memory"),
    [
        ("prod-eu/gpu-node-01", '"85Gi"'),
        ("prod-us/gpu-node-01", '"80Gi"'),
        ("gpu-node-01", '"85Gi"'),
    ],
    ids=["prod-eu", "prod-us", "default-cluster"],
)
async def test_prevent_reads_the_node_of_the_cluster_it_names(
    two: Demo, ref: str, requests_memory: str
) -> None:
    """Both clusters have a gpu-node-01 whose trainer requests different memory (seed: 68 GiB,
    slab-leak: 64 GiB), so the quota says which node was read; no prefix: the default."""
    result = await two.slack.slash_command(ALICE, CHANNEL, f"prevent {ref}")
    assert result.status == 200, result.body
    await two.drain()
    quotas = [
        f["content"].decode()
        for f in two.slack.files(CHANNEL)
        if f["name"] == "gpu-node-01-resourcequota.yaml"
    ]
    assert len(quotas) == 1
    assert f"requests.memory: {requests_memory}" in quotas[0]
    assert two.runtime.services.bg.errors == []


async def test_the_kubernetes_calls_of_every_cluster_are_counted_in_the_metrics(two: Demo) -> None:
    from tests.telemetry.scraping import scrape

    assert two.kubes is not None
    us = two.kubes["prod-us"]
    before, us_before = await scrape(two.bot_url), len(us.requests)
    result = await two.slack.slash_command(ALICE, CHANNEL, "prevent prod-us/gpu-node-01")
    assert result.status == 200, result.body
    await two.drain()
    after, us_calls = await scrape(two.bot_url), len(us.requests) - us_before

    counted = after.value("gpunode_kube_api_requests_total") - before.value(
        "gpunode_kube_api_requests_total"
    )
    assert us_calls > 0
    assert counted >= us_calls  # prod-us is not the default cluster, and its calls count
