"""A diagnosis costs what its node costs: the same API calls on a small and a ten times
larger cluster, every one of them scoped (a named object, a namespace, or a field selector
naming the node), counted where they land (``KubeSim.requests``, the real gateway over HTTP).

The fleet-wide facts a diagnosis needs (every node's free room) come from the gateway's
shared fleet read, made once by ``top`` (or the first diagnosis) and reused while fresh
(``fleet_cache_s``); discovery and the priority classes are reused for
``discovery_cache_s``.
"""

from __future__ import annotations

import asyncio
import re
from collections import Counter
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs

from bot.config import KubeSettings
from bot.core.model.clusters import DEFAULT_CLUSTER, NodeRef
from bot.core.model.thresholds import DEFAULT
from bot.kube.gateway import Gateway
from bot.kube.informing import Informer
from bot.services.clusters import ClusterRegistry
from bot.services.diagnose import DiagnoseService
from bot.store.storing import Store
from gpunode_sandbox.kubesim import KubeSim, Scenario
from gpunode_sandbox.kubesim.access import BOT_TOKEN
from gpunode_sandbox.kubesim.scenarios import load_scenario
from tests.services.fakes import FakeChat
from tests.services.presenting import RecordingPresenter

NODE = "gpu-node-01"
AT = NodeRef(cluster=DEFAULT_CLUSTER, node=NODE)
Request = tuple[str, str, str]


def seed_with_filler(nodes: int) -> Scenario:
    """The seed cluster plus ``nodes`` other nodes running 10 pods each."""
    seed, filler = load_scenario("seed"), Scenario.synthetic_fleet(nodes=nodes, pods=nodes * 10)
    return seed.model_copy(
        update={
            "nodes": [*seed.nodes, *filler.nodes],
            "workloads": [*seed.workloads, *filler.workloads],
        }
    )


def normalized(r: Request) -> tuple[str, str, str]:
    """Run ids, generated names and resourceVersions vary between runs; the shape does not."""
    method, path, query = r
    path = re.sub(r"gpunode-diag-[\w-]+", "JOB", path)
    query = re.sub(r"(run%3D)\w+", r"\1ID", query)
    query = re.sub(r"resourceVersion=\d+", "resourceVersion=RV", query)
    return method, path, query


#: cluster-wide configuration: a handful of objects however many nodes and pods there are,
#: read once per ``discovery_cache_s``
CONFIGURATION = ("priorityclasses", "runtimeclasses")


def unscoped(r: Request) -> bool:
    """A collection read across the cluster with nothing narrowing it to the node."""
    method, path, query = r
    selector = " ".join(parse_qs(query).get("fieldSelector", []))
    collection = re.fullmatch(r"(/api/v1|/apis/[\w.]+/\w+)/(\w+)", path)
    if method != "GET" or collection is None or collection.group(2) in ("v1", *CONFIGURATION):
        return False
    return f"={NODE}" not in selector


async def _two_diagnoses(
    make_kubesim: Callable[..., Awaitable[KubeSim]],
    tmp_path: Path,
    nodes: int,
    *,
    informers: bool = False,
    owner_cache_s: float = 3600,
) -> tuple[list[Request], list[Request]]:
    """The calls of the first diagnosis after a `top`, and of the next one of that node
    (with ``informers``: once the pod-events informer the first one started has listed, and
    the owner informers too). ``owner_cache_s``: how long the owners one diagnosis read are
    shared with the next (``fleet_cache_s``; 0: each diagnosis finds the cache expired)."""
    sim = await make_kubesim(seed_with_filler(nodes))
    gateway = Gateway.from_settings(
        KubeSettings(
            mode="server",
            server=sim.url,
            token=BOT_TOKEN,
            verify_tls=False,
            namespace="gpunode",
            job_timeout_s=30,
            fleet_cache_s=owner_cache_s,
        ),
        informers=informers,
    )
    gateway.events_watch_s = 1
    store = await Store.open(str(tmp_path / f"gpunode-{nodes}.db"))
    service = DiagnoseService(
        ClusterRegistry.single(gateway),
        store,
        chat := FakeChat(),
        thread=RecordingPresenter(chat),
        clock=lambda: datetime.now(UTC),
        thresholds=DEFAULT,
    )
    try:
        assert len(await gateway.gpu_node_loads()) > nodes // 5  # `top` read the fleet
        sim.requests.clear()
        first = await service.diagnose(AT, channel="C0INCIDENT", user="UREQ")
        assert first.error is None, first.error
        cold = list(sim.requests)
        if informers:
            events, owners = gateway.pod_events(), gateway.owner_informers()
            assert events is not None and owners is not None
            started: list[Informer[Any]] = [events, *owners.values()]
            for _ in range(1200):  # generous: up to 60 s on a busy machine
                if all(i.synced.is_set() for i in started):
                    break
                await asyncio.sleep(0.05)
            assert all(i.synced.is_set() for i in started), "an informer never listed"
        sim.requests.clear()
        outcome = await service.diagnose(AT, channel="C0INCIDENT", user="UREQ")
        assert outcome.error is None and outcome.diagnosis is not None, outcome.error
        # the informer's own list and watches are not the diagnosis's
        return cold, [r for r in sim.requests if not _informer_call(r)]
    finally:
        await store.close()
        gateway.close()


def shape(calls: list[Request]) -> Counter[tuple[str, str, str]]:
    """The calls, normalized; the Job's pod watch is left out: it is made only when the
    collector had not finished by the time its pods were first listed (timing, not size)."""
    return Counter(normalized(r) for r in calls if "watch=true" not in r[2])


#: what the informers list and watch, cluster-wide (pod events; pods, nodes; owners, budgets)
INFORMED = re.compile(
    r"/api/v1/(events|pods|nodes)"
    r"|/apis/(apps|batch)/v1/(replicasets|deployments|statefulsets|daemonsets|jobs|cronjobs)"
    r"|/apis/policy/v1/poddisruptionbudgets"
)


def _informer_call(r: Request) -> bool:
    """An informer's list or watch: of a whole collection, with no selector narrowing it to
    the node (the pod-events informer's is its kind)."""
    method, path, query = r
    if method != "GET" or not INFORMED.fullmatch(path):
        return False
    selectors = " ".join(parse_qs(query).get("fieldSelector", []))
    return NODE not in selectors and "labelSelector" not in query


def owner_reads(calls: list[Request]) -> list[Request]:
    """GETs of a controller, and lists of an owner's pods by its label selector."""
    return [
        r
        for r in calls
        if r[0] == "GET"
        and (
            re.fullmatch(r"/apis/(apps|batch)/v1/namespaces/[\w-]+/\w+/[\w.-]+", r[1])
            or (r[1].endswith("/pods") and "labelSelector" in r[2] and "gpunode.io" not in r[2])
        )
    ]


async def test_a_diagnosis_makes_the_same_scoped_calls_at_every_cluster_size(
    make_kubesim: Callable[..., Awaitable[KubeSim]], tmp_path: Path
) -> None:
    runs = [await _two_diagnoses(make_kubesim, tmp_path, n) for n in (20, 80, 200)]
    for cold, warm in runs[1:]:
        assert shape(cold) == shape(runs[0][0])
        assert shape(warm) == shape(runs[0][1])
    for cold, warm in runs:
        assert [r for r in cold + warm if unscoped(r)] == []
        assert not any(
            r[1] in ("/api/v1/nodes", "/api/v1/pods") and "fieldSelector" not in r[2]
            for r in cold + warm
        )


async def test_each_owner_is_looked_up_once_across_diagnoses(
    make_kubesim: Callable[..., Awaitable[KubeSim]], tmp_path: Path
) -> None:
    cold, warm = await _two_diagnoses(make_kubesim, tmp_path, 20)
    looked_up = owner_reads(cold)
    assert looked_up, "the seed node's pods have owners: the first diagnosis reads them"
    assert len(set(map(normalized, looked_up))) == len(looked_up)  # once each
    assert owner_reads(warm) == []  # the next diagnosis reuses them
    assert shape(warm) <= shape(cold) - shape(looked_up)  # and makes no call of its own


async def test_a_write_through_the_gateway_drops_the_shared_fleet_read(
    make_kubesim: Callable[..., Awaitable[KubeSim]],
) -> None:
    sim = await make_kubesim("seed")
    gateway = Gateway.from_settings(
        KubeSettings(
            mode="server",
            server=sim.url,
            token=BOT_TOKEN,
            verify_tls=False,
            namespace="gpunode",
            fleet_cache_s=3600,
        )
    )
    try:
        before = {r.name: r.unschedulable for r in (await gateway.fleet()).room()}
        lists = len(sim.requests)
        await gateway.fleet()
        assert len(sim.requests) == lists  # shared while fresh: no new read
        await gateway.cordon("gpu-node-02", dry_run=False)
        after = {r.name: r.unschedulable for r in (await gateway.fleet()).room()}
    finally:
        gateway.close()
    assert (before["gpu-node-02"], after["gpu-node-02"]) == (False, True)


async def test_with_the_pod_events_informer_a_diagnosis_makes_at_most_ten_calls(
    make_kubesim: Callable[..., Awaitable[KubeSim]], tmp_path: Path
) -> None:
    runs = [await _two_diagnoses(make_kubesim, tmp_path, n, informers=True) for n in (20, 200)]
    assert shape(runs[0][1]) == shape(runs[1][1])
    for _, warm in runs:
        assert len(warm) <= 10, [normalized(r) for r in warm]
        assert [r for r in warm if unscoped(r)] == []
        assert not any("/events" in r[1] and "/namespaces/" in r[1] for r in warm)


async def test_with_the_owner_informers_a_diagnosis_long_after_the_last_makes_at_most_ten(
    make_kubesim: Callable[..., Awaitable[KubeSim]], tmp_path: Path
) -> None:
    """The usual incident: the owners the last diagnosis read are long expired. The owner
    and budget informers answer for them, so the diagnosis reads no owner and lists no
    budget, at any cluster size."""
    runs = [
        await _two_diagnoses(make_kubesim, tmp_path, n, informers=True, owner_cache_s=0)
        for n in (20, 200)
    ]
    assert shape(runs[0][1]) == shape(runs[1][1])
    for cold, warm in runs:
        for calls in ([r for r in cold if not _informer_call(r)], warm):
            # the first started the owner informers, and waited for their lists
            assert owner_reads(calls) == []
            assert not any(r[1].endswith("/poddisruptionbudgets") for r in calls), calls
        assert len(warm) <= 10, [normalized(r) for r in warm]
        assert [r for r in warm if unscoped(r)] == []
