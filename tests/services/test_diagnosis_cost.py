"""A diagnosis costs what its node costs: the same API calls on a small and a ten times
larger cluster, every one of them scoped (a named object, a namespace, or a field selector
naming the node), counted where they land (``KubeSim.requests``, the real gateway over HTTP).

The fleet-wide facts a diagnosis needs (every node's free room) come from the gateway's
shared fleet read, made once by ``top`` (or the first diagnosis) and reused while fresh
(``fleet_cache_s``); discovery and the priority classes are reused for
``discovery_cache_s``.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from pathlib import Path
from urllib.parse import parse_qs

from bot.config import KubeSettings
from bot.core.thresholds import DEFAULT
from bot.kube.gateway import Gateway
from bot.sandbox.kubesim import KubeSim, Scenario
from bot.sandbox.kubesim.access import BOT_TOKEN
from bot.sandbox.kubesim.scenarios import load_scenario
from bot.services.diagnose import DiagnoseService
from bot.store.storing import Store
from tests.services.fakes import FakeChat
from tests.services.presenting import RecordingPresenter

NODE = "gpu-node-01"
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


def unscoped(r: Request) -> bool:
    """A collection read across the cluster with nothing narrowing it to the node."""
    method, path, query = r
    selector = " ".join(parse_qs(query).get("fieldSelector", []))
    collection = re.fullmatch(r"(/api/v1|/apis/[\w.]+/\w+)/(\w+)", path)
    if method != "GET" or collection is None or collection.group(2) in ("", "v1"):
        return False
    return f"={NODE}" not in selector


async def _one_diagnosis(
    make_kubesim: Callable[..., Awaitable[KubeSim]], tmp_path: Path, nodes: int
) -> list[Request]:
    sim = await make_kubesim(seed_with_filler(nodes))
    gateway = Gateway.from_settings(
        KubeSettings(
            mode="server", server=sim.url, token=BOT_TOKEN, verify_tls=False,
            namespace="gpunode", job_timeout_s=30, fleet_cache_s=3600,
        )
    )  # fmt: skip
    store = await Store.open(str(tmp_path / f"gpunode-{nodes}.db"))
    service = DiagnoseService(
        gateway,
        store,
        chat := FakeChat(),
        thread=RecordingPresenter(chat),
        clock=lambda: datetime.now(UTC),
        thresholds=DEFAULT,
        charts=False,
    )
    try:
        assert len(await gateway.gpu_node_loads()) > nodes // 5  # `top` read the fleet
        first = await service.diagnose(NODE, channel="C0INCIDENT", user="UREQ")
        assert first.error is None, first.error
        sim.requests.clear()
        outcome = await service.diagnose(NODE, channel="C0INCIDENT", user="UREQ")
        assert outcome.error is None and outcome.diagnosis is not None, outcome.error
        return list(sim.requests)
    finally:
        await store.close()
        gateway.close()


async def test_a_diagnosis_makes_the_same_scoped_calls_on_a_ten_times_larger_cluster(
    make_kubesim: Callable[..., Awaitable[KubeSim]], tmp_path: Path
) -> None:
    small = await _one_diagnosis(make_kubesim, tmp_path, 20)
    large = await _one_diagnosis(make_kubesim, tmp_path, 200)
    assert Counter(map(normalized, small)) == Counter(map(normalized, large))
    assert [r for r in large if unscoped(r)] == []
    assert not any(
        r[1] in ("/api/v1/nodes", "/api/v1/pods") and "fieldSelector" not in r[2] for r in large
    )


async def test_a_write_through_the_gateway_drops_the_shared_fleet_read(
    make_kubesim: Callable[..., Awaitable[KubeSim]],
) -> None:
    sim = await make_kubesim("seed")
    gateway = Gateway.from_settings(
        KubeSettings(
            mode="server", server=sim.url, token=BOT_TOKEN, verify_tls=False,
            namespace="gpunode", fleet_cache_s=3600,
        )
    )  # fmt: skip
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
