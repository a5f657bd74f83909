"""A serving bot keeps every built-in controller and every PodDisruptionBudget in informers
(slim records, ``bot.kube.ownerrecords``), so a diagnosis reads its pods' owners and its
namespaces' budgets from memory however long since the last one, and the view it builds is
the view the API's own answers build. The stand-in serves the lists and watches over HTTP,
under the ClusterRole deploy/base ships."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import pytest

from bot.config import KubeSettings
from bot.core.model.cluster import ClusterView
from bot.kube.gateway import BUDGETS, Gateway
from bot.kube.informing import Informer
from bot.kube.ownerrecords import INFORMED_CONTROLLERS
from gpunode_sandbox.kubesim import KubeSim, Scenario
from gpunode_sandbox.kubesim.access import BOT_TOKEN
from tests.conftest import kube_call
from tests.kube.remedy_scenarios import GANG_CRDS, container, gang_fleet, seed_with
from tests.kube.test_fleet_informers import until

NODE = "gpu-node-01"
HELM = {
    "meta.helm.sh/release-name": "prep",
    "meta.helm.sh/release-namespace": "data-prep",
    "gpunode.io/helm-values-key.memory-limit": "resources.limits.memory",
    "kubectl.kubernetes.io/last-applied-configuration": '{"kind":"Deployment","spec":{}}' * 50,
}


def rich_cluster() -> Scenario:
    """``gang_fleet`` (gangs, batch Jobs, gpunode's own pod) and, on the node, a Helm- and
    Argo-managed Deployment, a partitioned StatefulSet, a DaemonSet, a CronJob's Job: each
    rollout fact an informer's record must keep."""
    gangs = gang_fleet().model_dump(mode="json")
    extra: list[dict[str, Any]] = [
        {
            "kind": "Deployment",
            "name": "feature-etl",
            "namespace": "data-prep",
            "replicas": 2,
            "nodes": [NODE, "gpu-node-02"],
            "labels": {"app": "feature-etl"},
            "containers": [container("etl"), container("shipper")],
            "controller_labels": {
                "app.kubernetes.io/managed-by": "Helm",
                "helm.sh/chart": "etl-1.4.2",
                "argocd.argoproj.io/instance": "etl",
            },
            "controller_annotations": HELM,
            "controller_spec": {
                "strategy": {
                    "type": "RollingUpdate",
                    "rollingUpdate": {"maxSurge": "50%", "maxUnavailable": 1},
                }
            },
        },
        {
            "kind": "StatefulSet",
            "name": "shard-store",
            "namespace": "serving",
            "replicas": 1,
            "nodes": [NODE],
            "labels": {"app": "shard-store"},
            "containers": [container("store")],
            "controller_spec": {
                "podManagementPolicy": "Parallel",
                "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"partition": 0}},
            },
        },
        {
            "kind": "DaemonSet",
            "name": "node-agent",
            "namespace": "kube-system",
            "labels": {"app": "node-agent"},
            "containers": [container("agent")],
        },
        {
            "kind": "Job",
            "name": "nightly-report-29012345",
            "namespace": "ml-train",
            "nodes": [NODE],
            "containers": [container("report")],
            "owner": {
                "api_version": "batch/v1",
                "kind": "CronJob",
                "name": "nightly-report",
                "spec": {
                    "schedule": "0 2 * * *",
                    "jobTemplate": {
                        "spec": {
                            "template": {
                                "spec": {
                                    "restartPolicy": "Never",
                                    "containers": [{"name": "report", "image": "busybox"}],
                                }
                            }
                        }
                    },
                },
            },
        },
    ]
    workloads = [w for w in gangs["workloads"] if w["name"] not in {e["name"] for e in extra}]
    return seed_with(
        [*workloads[len(seed_with().workloads) :], *extra],
        crds=GANG_CRDS,
    )


def _settings(sim: KubeSim, **over: Any) -> KubeSettings:
    return KubeSettings(
        mode="server",
        server=sim.url,
        token=BOT_TOKEN,
        verify_tls=False,
        namespace="gpunode",
        fleet_cache_s=0,  # every diagnosis after the owner cache expired: the usual incident
        **over,
    )


def owners_of(gw: Gateway) -> dict[str, Informer[str]]:
    held = gw.owner_informers()
    assert held is not None, "a serving bot's gateway keeps owner informers"
    return held


async def primed(sim: KubeSim) -> Gateway:
    """A serving bot's gateway whose informers have all listed."""
    gw = Gateway.from_settings(_settings(sim), informers=True)
    gw.prime()
    held = owners_of(gw)
    fleet = gw.fleet_informers()
    assert fleet is not None
    informers: list[Informer[Any]] = [*held.values(), *fleet]
    await until(lambda: all(i.synced.is_set() for i in informers), "the informers' lists")
    return gw


def owner_reads(sim: KubeSim) -> list[tuple[str, str, str]]:
    """Owner GETs and budget lists the stand-in served (none of them an informer's)."""
    return [
        r
        for r in sim.requests
        if r[0] == "GET"
        and "watch=true" not in r[2]
        and "/namespaces/" in r[1]
        and (
            any(f"/{plural}/" in r[1] for _, plural in INFORMED_CONTROLLERS.values())
            or r[1].endswith("/poddisruptionbudgets")
        )
    ]


def comparable(view: ClusterView) -> dict[str, Any]:
    """What the owners and budgets decide in a view: every pod (its owner chain), the
    workloads' rollout facts, the gang members elsewhere, the budgets."""
    return view.model_dump(
        include={"pods", "workloads", "gang_pods", "budgets", "allocated", "events"}
    )


Gateways = tuple[KubeSim, Gateway, Gateway]


@pytest.fixture
async def gateways(make_kubesim: Callable[..., Awaitable[KubeSim]]) -> AsyncIterator[Gateways]:
    """``rich_cluster`` in a stand-in; a one-shot command's gateway (no informers, every
    owner read from the API) and a serving bot's, its informers listed."""
    sim = await make_kubesim(rich_cluster())
    listing = Gateway.from_settings(_settings(sim))
    informed = await primed(sim)
    try:
        yield sim, listing, informed
    finally:
        listing.close()
        informed.close()


async def test_a_view_from_the_owner_informers_is_the_view_the_api_answers_build(
    gateways: Gateways,
) -> None:
    sim, listing, informed = gateways
    by_api = await listing.get_cluster_view(NODE)
    read = owner_reads(sim)
    sim.requests.clear()
    from_memory = await informed.get_cluster_view(NODE)
    again = await informed.get_cluster_view(NODE)  # the owner cache expired (0 s)
    held = owner_reads(sim)
    assert comparable(from_memory) == comparable(by_api) == comparable(again)
    kinds = {w.kind for w in by_api.workloads}
    assert {"Deployment", "StatefulSet", "DaemonSet", "Job"} <= kinds, kinds
    chains = {tuple(o.kind for o in p.owners) for p in by_api.pods}
    assert ("Job", "CronJob") in chains and ("ReplicaSet", "Deployment") in chains, chains
    etl = next(w for w in by_api.workloads if w.name == "feature-etl")
    assert (etl.helm_release, etl.gitops, etl.max_surge) == ("data-prep/prep", "Argo CD", "50%")
    assert etl.helm_keys and etl.containers == ["etl", "shipper"]
    assert by_api.budgets, "the seed's budgets are in the node's namespaces"
    assert read, "the view read by the API walks each owner and lists the budgets"
    assert held == [], held


async def test_an_informer_that_cannot_answer_leaves_the_owner_to_a_get(
    gateways: Gateways,
) -> None:
    sim, listing, informed = gateways
    held = owners_of(informed)
    held["ReplicaSet"].stop()  # no longer synced: as after a failed watch
    held[BUDGETS].stop()
    sim.requests.clear()
    view = await informed.get_cluster_view(NODE)
    read = owner_reads(sim)
    by_api = await listing.get_cluster_view(NODE)
    assert comparable(view) == comparable(by_api)
    assert any("/replicasets/" in r[1] for r in read), read
    assert any(r[1].endswith("/poddisruptionbudgets") for r in read), read
    assert not any("/deployments/" in r[1] for r in read), "the Deployments' informer answers"


async def test_a_change_another_client_makes_reaches_the_next_view_through_the_watch(
    gateways: Gateways,
) -> None:
    sim, _, informed = gateways
    deployments = owners_of(informed)["Deployment"]
    seen = deployments.generation
    path = "/apis/apps/v1/namespaces/data-prep/deployments/feature-etl"
    status, answer = await kube_call(
        sim.url,
        "PATCH",
        path,
        body={
            "metadata": {"annotations": {"meta.helm.sh/release-name": "prep-v2"}},
            "spec": {"strategy": {"rollingUpdate": {"maxSurge": 3}}},
        },
        content_type="application/merge-patch+json",
    )
    assert status == 200, answer
    await until(lambda: deployments.generation > seen, "the Deployment's watch event")
    sim.requests.clear()
    view = await informed.get_cluster_view(NODE)
    read = owner_reads(sim)
    etl = next(w for w in view.workloads if w.name == "feature-etl")
    assert (etl.helm_release, etl.max_surge) == ("data-prep/prep-v2", "3")
    assert read == []
