"""The tier planners' pod selections served from the pods informer: a required (anti-)affinity
term's or a spread constraint's peers (every namespace, by label selector) and an owner's
replicas on other nodes (its namespace, by its ``spec.selector``) come from memory once the
informer is synced, and from the API when it is not, and every plan is the same either way.

Through the real gateway over HTTP against the stand-in, whose own label-selector parser
(``gpunode_sandbox.kubesim.selectors``) answers the lists the informer's selection must equal.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import UTC, datetime

import pytest

from bot.core.model.cluster import ClusterView
from bot.core.model.thresholds import DEFAULT
from bot.core.remedies.planning import plan_tier1, plan_tier2
from bot.core.reporting.analysis import analyze
from bot.kube import reading, selections
from bot.kube.cutting import FleetShare, pod_records_page
from bot.kube.doing import Doing
from bot.kube.gateway import Gateway
from bot.kube.selectors import parse_selector
from gpunode_sandbox.kubesim import KubeSim, Scenario
from tests.conftest import kube_call
from tests.kube import test_affinity_placement as affinity
from tests.kube import test_plan_blast_radius as blast
from tests.kube import test_tier2_spread as spread
from tests.kube.conftest import ensure_namespace, settings_for
from tests.kube.remedy_scenarios import container, seed_with
from tests.services.test_diagnosis_cost import normalized

WAIT_S = 60.0  # generous: the machine may be busy; nothing here is timed
Request = tuple[str, str, str]
Make = Callable[..., Awaitable[tuple[Gateway, Gateway, KubeSim]]]


@pytest.fixture
async def two_gateways(
    make_kubesim: Callable[..., Awaitable[KubeSim]],
) -> AsyncIterator[Make]:
    """(listing, informed, sim): a gateway that reads the API (and shares no read between
    views), and one whose pods and nodes informers have listed, both with the bot's token,
    over one stand-in."""
    made: list[Gateway] = []

    async def make(scenario: Scenario) -> tuple[Gateway, Gateway, KubeSim]:
        sim = await make_kubesim(scenario)
        ensure_namespace(sim)
        listing = Gateway.from_settings(settings_for(sim.url, fleet_cache_s=0))
        informed = Gateway.from_settings(settings_for(sim.url), informers=True)
        informed.fleet_watch_s = 1
        made.extend((listing, informed))
        await informed.fleet()  # waits out the informers' first list
        informers = informed.fleet_informers()
        assert informers is not None and informers[0].synced.is_set()
        return listing, informed, sim

    yield make
    for gw in made:
        gw.close()


def selected_pod_lists(calls: list[Request]) -> list[Request]:
    """The pod lists the plans' selections make: by label selector, or of a namespace (not
    the node's own pods, by field selector, nor the fleet read every node's room comes from)."""
    return [
        r
        for r in calls
        if r[0] == "GET"
        and "watch=true" not in r[2]
        and (
            re.fullmatch(r"/api/v1/namespaces/[\w-]+/pods", r[1])
            or (r[1] == "/api/v1/pods" and "labelSelector" in r[2])
        )
    ]


async def view_with_calls(
    gw: Gateway, sim: KubeSim, node: str
) -> tuple[ClusterView, list[Request]]:
    sim.requests.clear()
    view = await gw.get_cluster_view(node)
    return view, [r for r in sim.requests if "watch=true" not in r[2]]


def same_plans(a: ClusterView, b: ClusterView) -> None:
    assert a.peers == b.peers
    assert a.namespace_labels == b.namespace_labels
    assert a.workloads == b.workloads
    assert plan_tier1(a) == plan_tier1(b)
    assert plan_tier2(a) == plan_tier2(b)


SCENARIOS = {
    "affinity": (lambda: seed_with(affinity._fleet()), affinity.NODE),
    "spread": (lambda: spread._fleet(1), spread.NODE),
    "replicas elsewhere": (blast._spread, blast.NODE),
}


@pytest.mark.parametrize("name", sorted(SCENARIOS))
async def test_a_plan_served_from_the_informer_is_the_plan_the_api_lists_give(
    two_gateways: Make, name: str
) -> None:
    scenario, node = SCENARIOS[name]
    listing, informed, sim = await two_gateways(scenario())
    listed, listed_calls = await view_with_calls(listing, sim, node)
    held, held_calls = await view_with_calls(informed, sim, node)
    assert selected_pod_lists(listed_calls), "the scenario makes the plans select pods"
    assert selected_pod_lists(held_calls) == []
    same_plans(listed, held)


async def test_a_cap_names_the_same_replicas_on_other_nodes_from_memory(
    two_gateways: Make,
) -> None:
    listing, informed, sim = await two_gateways(blast._spread())
    listed, _ = await view_with_calls(listing, sim, blast.NODE)
    held, calls = await view_with_calls(informed, sim, blast.NODE)
    [workload] = [w for w in held.workloads if w.name == "api-gateway"]
    assert len(workload.elsewhere) == 12 and set(workload.elsewhere.values()) == {"cpu-node-23"}
    assert selected_pod_lists(calls) == []
    bundle = await listing.run_diagnostic(blast.NODE)
    now = datetime.now(UTC)
    tier3 = [
        next(p for p in analyze(bundle, v, thresholds=DEFAULT, now=now).plans if p.tier == 3)
        for v in (listed, held)
    ]
    assert tier3[0] == tier3[1]
    note = next(n for n in tier3[1].notes if n.code == "rolls_other_nodes")
    assert note.params["elsewhere"] == 12


async def test_the_plans_list_from_the_api_while_the_informer_is_not_synced(
    two_gateways: Make,
) -> None:
    listing, informed, sim = await two_gateways(seed_with(affinity._fleet()))
    informers = informed.fleet_informers()
    assert informers is not None
    informers[0].stop()  # as a failed watch does: not synced until it lists again
    held, calls = await view_with_calls(informed, sim, affinity.NODE)
    listed, _ = await view_with_calls(listing, sim, affinity.NODE)
    assert selected_pod_lists(calls)  # it asked the API
    same_plans(listed, held)


async def test_a_replica_deleted_elsewhere_leaves_the_plan_without_another_list(
    two_gateways: Make,
) -> None:
    listing, informed, sim = await two_gateways(blast._spread())
    held, _ = await view_with_calls(informed, sim, blast.NODE)
    [workload] = [w for w in held.workloads if w.name == "api-gateway"]
    gone = sorted(workload.elsewhere)[0]
    status, _ = await kube_call(
        sim.url, "DELETE", f"/api/v1/namespaces/web/pods/{gone.split('/')[1]}"
    )
    assert status == 200
    informers = informed.fleet_informers()
    assert informers is not None
    pods = informers[0]
    loop = asyncio.get_running_loop()
    deadline = loop.time() + WAIT_S
    after = held
    while True:
        after, calls = await view_with_calls(informed, sim, blast.NODE)
        [workload] = [w for w in after.workloads if w.name == "api-gateway"]
        if gone not in workload.elsewhere:
            break
        assert loop.time() < deadline, "the informer never saw the deletion"
        await asyncio.sleep(0.1)
    assert selected_pod_lists(calls) == []
    # its ReplicaSet may replace it meanwhile: the lists and the memory agree once the watch
    # has brought that too
    while True:
        listed, _ = await view_with_calls(listing, sim, blast.NODE)
        after, calls = await view_with_calls(informed, sim, blast.NODE)
        assert selected_pod_lists(calls) == []
        if listed.workloads == after.workloads:
            break
        assert loop.time() < deadline, "the memory never caught up with the lists"
        await asyncio.sleep(0.1)
    same_plans(listed, after)
    assert pods.lists == 1  # followed by the watch, never listed again


# -- label selectors: the informer selects what the API server's list does ----------------
LABELLED = {
    "a": {"role": "web", "tier": "front", "env": "prod"},
    "b": {"role": "web", "tier": "back"},
    "c": {"role": "db", "env": "staging"},
    "d": {"role": "db", "tier": "back", "env": "prod", "team": "x"},
    "e": {"team": "x"},
    "f": {},
}
#: (the stand-in labels a bare pod ``app=<name>``, so the table says ``role``)
#: selector -> which of LABELLED's pods it selects (apimachinery's ``Requirement.Matches``)
SELECTORS = {
    "": "abcdef",
    "role=web": "ab",
    "role==web": "ab",
    "role = web": "ab",
    "role!=web": "cdef",
    "tier in (front,back)": "abd",
    "tier in ( front , back )": "abd",
    "tier notin (front)": "bcdef",
    "env": "acd",
    "!env": "bef",
    "role=db,env=prod": "d",
    "role in (web,db),!team": "abc",
    "team,tier notin (back)": "e",
    "env!=prod,role": "bc",
}


def labelled_fleet() -> Scenario:
    return seed_with(
        [
            {
                "kind": "Pod",
                "name": f"sel-{name}",
                "namespace": "data-prep",
                "nodes": ["cpu-node-01"],
                "labels": labels,
                "containers": [container()],
            }
            for name, labels in LABELLED.items()
        ]
    )


async def test_the_informer_selects_the_pods_the_api_server_lists(
    make_kubesim: Callable[..., Awaitable[KubeSim]],
) -> None:
    sim = await make_kubesim(labelled_fleet())
    gw = Gateway.from_settings(settings_for(sim.url))
    try:
        every = await gw._call(Doing.of("list_pods_selected", selector="''"), reading.list_all_pods)
        listed = {
            text: await gw._call(
                Doing.of("list_pods_selected", selector=text), reading.list_pods_selected, text
            )
            for text in SELECTORS
        }
    finally:
        gw.close()
    # the pods as the informer holds them: a list page cut in the decoder, parts shared
    body = json.dumps({"metadata": {"resourceVersion": "1"}, "items": every}).encode()
    share = FleetShare()
    records = [(ns, name, share.pod(r)) for ns, name, r in pod_records_page(body).items]
    for text, expected in SELECTORS.items():
        held = selections.select(records, parse_selector(text))
        assert held == selections.cut(listed[text]), text
        ours = "".join(
            sorted(
                p["metadata"]["name"][4:] for p in held if p["metadata"]["name"].startswith("sel-")
            )
        )
        assert ours == expected, text


# -- what a plan costs: the same calls on a small and a ten times larger cluster ----------
def with_filler(scenario: Scenario, nodes: int) -> Scenario:
    """``scenario`` plus ``nodes`` other nodes running 10 pods each."""
    filler = Scenario.synthetic_fleet(nodes=nodes, pods=nodes * 10)
    return scenario.model_copy(
        update={
            "nodes": [*scenario.nodes, *filler.nodes],
            "workloads": [*scenario.workloads, *filler.workloads],
        }
    )


def shape(calls: list[Request]) -> Counter[Request]:
    return Counter(normalized(r) for r in calls)


@pytest.mark.parametrize("name", sorted(SCENARIOS))
async def test_the_plans_view_makes_the_same_calls_at_two_cluster_sizes_and_lists_no_pods(
    two_gateways: Make, name: str
) -> None:
    scenario, node = SCENARIOS[name]
    counted: dict[int, Counter[Request]] = {}
    for size in (20, 200):
        listing, informed, sim = await two_gateways(with_filler(scenario(), size))
        _, cold = await view_with_calls(informed, sim, node)  # discovery, owners: once a while
        _, held = await view_with_calls(informed, sim, node)
        _, listed = await view_with_calls(listing, sim, node)
        assert selected_pod_lists(cold + held) == []
        assert selected_pod_lists(listed)  # the same view, listing, selects pods
        counted[size] = shape(held)
        print(
            f"{name} at {size} filler nodes: {len(cold)}/{len(held)} calls (first/next) from"
            f" memory, {len(listed)} listing ({len(selected_pod_lists(listed))} pod lists)"
        )
    assert counted[20] == counted[200]
