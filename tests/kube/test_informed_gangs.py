"""The members of a node's training gangs on other nodes, served from the pods informer: the
same members (and the same plans) as the API's list of each gang namespace, and no such list
once the informer is synced.

Clusters are generated with gangs of every recognised kind planted on the node and around it:
told by a direct gang owner, by an owner found only up the chain (a JobSet's Job, a
LeaderWorkerSet's StatefulSet, a RayCluster's Deployment, a Kueue-queued Deployment), by
labels alone or by Volcano's annotation alone; members on other nodes, on no node yet,
finished, being deleted; and decoys: pods of another namespace with the same labels and
owners' names, a batch Job named like a gang's owned by another JobSet. Each planted member
carries a ``planted`` label (no gang reads it), so what a view should name is known apart
from the code under test. Through the real gateways over HTTP against the stand-in.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from typing import Any

import pytest

from bot.core.model.cluster import ClusterView
from bot.core.model.gangs import gang_of
from bot.core.remedies.planning import plan_tier1
from bot.kube import members
from bot.kube.cutting import pod_record
from bot.kube.gateway import Gateway
from gpunode_sandbox.kubesim import KubeSim, Scenario
from tests.conftest import kube_call
from tests.kube.conftest import ensure_namespace, settings_for
from tests.kube.remedy_scenarios import container, seed_with
from tests.kube.test_informed_selections import selected_pod_lists, view_with_calls

NODE = "gpu-node-01"
ELSEWHERE: list[str | None] = ["gpu-node-02", "cpu-node-01", None]  # None: on no node yet
NS, DECOY_NS = "ml-train", "ml-other"
KF = "training.kubeflow.org"
CRDS = [
    "pytorchjobs.kubeflow.org",
    "jobsets.jobset.x-k8s.io",
    "leaderworkersets.leaderworkerset.x-k8s.io",
    "rayclusters.ray.io",
    "jobs.batch.volcano.sh",
]
Make = Callable[..., Awaitable[tuple[Gateway, Gateway, KubeSim]]]


def owner(api_version: str, kind: str, name: str) -> dict[str, str]:
    return {"api_version": api_version, "kind": kind, "name": name}


#: gang kind -> (the workload kind each member is, what makes it a member of gang ``g``)
KINDS: dict[str, tuple[str, Callable[[str], dict[str, Any]]]] = {
    "pytorchjob": (
        "Pod",
        lambda g: {
            "labels": {f"{KF}/job-name": g, f"{KF}/replica-type": "worker"},
            "owner": owner("kubeflow.org/v1", "PyTorchJob", g),
        },
    ),
    "jobset by chain": ("Job", lambda g: {"owner": owner("jobset.x-k8s.io/v1alpha2", "JobSet", g)}),
    "leaderworkerset by chain": (
        "StatefulSet",
        lambda g: {"owner": owner("leaderworkerset.x-k8s.io/v1", "LeaderWorkerSet", g)},
    ),
    "raycluster by a deployment": (
        "Deployment",
        lambda g: {"owner": owner("ray.io/v1", "RayCluster", g)},
    ),
    "raycluster": (
        "Pod",
        lambda g: {"labels": {"ray.io/cluster": g}, "owner": owner("ray.io/v1", "RayCluster", g)},
    ),
    "volcano job": (
        "Pod",
        lambda g: {
            "annotations": {"scheduling.k8s.io/group-name": f"{g}-pg"},
            "owner": owner("batch.volcano.sh/v1alpha1", "Job", g),
        },
    ),
    "volcano podgroup annotation": (
        "Pod",
        lambda g: {"annotations": {"scheduling.k8s.io/group-name": g}},
    ),
    "kubeflow label": ("Pod", lambda g: {"labels": {f"{KF}/job-name": g}}),
    "jobset label": ("Pod", lambda g: {"labels": {"jobset.sigs.k8s.io/jobset-name": g}}),
    "lws labels": (
        "Pod",
        lambda g: {
            "labels": {
                "leaderworkerset.sigs.k8s.io/name": g,
                "leaderworkerset.sigs.k8s.io/group-index": "1",
            }
        },
    ),
    "coscheduling label": ("Pod", lambda g: {"labels": {"scheduling.x-k8s.io/pod-group": g}}),
    "kueue pod group": ("Pod", lambda g: {"labels": {"kueue.x-k8s.io/pod-group-name": g}}),
    "spark label": ("Pod", lambda g: {"labels": {"sparkoperator.k8s.io/app-name": g}}),
    "kueue queued deployment": (
        "Deployment",
        lambda g: {"labels": {"kueue.x-k8s.io/queue-name": g}},
    ),
}


def workload(
    kind: str, name: str, where: str | None, ns: str, planted: str, **fields: Any
) -> dict[str, Any]:
    made = {
        "kind": kind,
        "name": name,
        "namespace": ns,
        "nodes": [where] if where else [],
        "containers": [container()],
        **fields,
    }
    made["labels"] = {**fields.get("labels", {}), "planted": planted}
    return made


def generated(seed: int, extra: Sequence[dict[str, Any]] = ()) -> tuple[Scenario, list[str]]:
    """A cluster with every gang kind planted on ``NODE`` and around it (and ``extra``), and
    the members to delete (bound, running, not on ``NODE``) once it runs: names of workloads
    whose pods those are."""
    rng = random.Random(seed)
    planted: list[dict[str, Any]] = []
    deleting: list[str] = []
    for i, (gang_kind, (kind, member)) in enumerate(sorted(KINDS.items())):
        g = f"g{i}"
        if gang_kind == "kueue queued deployment":
            # one Deployment is one gang: its replicas go where its nodes say, all alike
            nodes = [NODE, *rng.sample([n for n in ELSEWHERE if n], 2)]
            planted.append(
                workload(kind, g, None, NS, g, replicas=3, **member(g)) | {"nodes": nodes}
            )
            continue
        for m in range(rng.randint(2, 5)):
            where = NODE if m == 0 else rng.choice(ELSEWHERE)
            phase = "Running" if m == 0 else rng.choice(["Running"] * 3 + ["Succeeded", "Failed"])
            name = f"{g}-m{m}"
            planted.append(workload(kind, name, where, NS, g, phase=phase, **member(g)))
            if m and where and phase == "Running" and rng.random() < 0.5:
                deleting.append(name)
        # the same labels and owner names in another namespace: no member of it
        planted.append(
            workload(kind, f"{g}-decoy", rng.choice(ELSEWHERE[:2]), DECOY_NS, "decoy", **member(g))
        )
    # a batch Job named as a Volcano gang's owner, owned by another JobSet (by group, not kind)
    volcano = sorted(KINDS).index("volcano job")
    planted.append(
        workload(
            "Job",
            f"g{volcano}",
            "gpu-node-02",
            NS,
            "decoy",
            owner=owner("jobset.x-k8s.io/v1alpha2", "JobSet", "other"),
        )
    )
    return seed_with([*planted, *extra], crds=CRDS), deleting


def expected(sim: KubeSim) -> set[str]:
    """What the planted labels say a view must name: planted members not on ``NODE`` and not
    finished."""
    return {
        f"{p['metadata']['namespace']}/{p['metadata']['name']}"
        for p in sim.api.store.list("pods")
        if (p["metadata"].get("labels") or {}).get("planted", "decoy") != "decoy"
        and p["spec"].get("nodeName") != NODE
        and p["status"].get("phase") not in ("Succeeded", "Failed")
    }


@pytest.fixture
async def gang_gateways(
    make_kubesim: Callable[..., Awaitable[KubeSim]],
) -> AsyncIterator[Callable[[int], Awaitable[tuple[Gateway, Gateway, KubeSim]]]]:
    """(listing, informed, sim) over a generated cluster whose chosen members are being
    deleted (their grace period outlasts the test) before the informer lists."""
    made: list[Gateway] = []

    async def make(seed: int) -> tuple[Gateway, Gateway, KubeSim]:
        scenario, deleting = generated(seed)
        sim = await make_kubesim(scenario)
        ensure_namespace(sim)
        sim.sigterm_exit_s = 3600.0
        for pod in sim.api.store.list("pods"):
            meta = pod["metadata"]
            if meta["namespace"] == NS and any(
                meta["name"].startswith(f"{w}-") or meta["name"] == w for w in deleting
            ):
                path = f"/api/v1/namespaces/{NS}/pods/{meta['name']}?gracePeriodSeconds=3600"
                status, _ = await kube_call(sim.url, "DELETE", path)
                assert status == 200
        listing = Gateway.from_settings(settings_for(sim.url, fleet_cache_s=0))
        informed = Gateway.from_settings(settings_for(sim.url), informers=True)
        informed.fleet_watch_s = 1
        made.extend((listing, informed))
        await informed.fleet()  # waits out the informers' first list
        return listing, informed, sim

    yield make
    for gw in made:
        gw.close()


def gangs_on_node(view: ClusterView) -> set[str]:
    return {g.key for p in view.pods if (g := gang_of(p)) is not None}


@pytest.mark.parametrize("seed", range(4))
async def test_the_informer_names_the_gang_members_the_namespace_lists_name(
    gang_gateways: Callable[[int], Awaitable[tuple[Gateway, Gateway, KubeSim]]], seed: int
) -> None:
    listing, informed, sim = await gang_gateways(seed)
    listed, listed_calls = await view_with_calls(listing, sim, NODE)
    held, held_calls = await view_with_calls(informed, sim, NODE)
    # the generated cluster holds what it should: every kind, members of every sort
    assert len(gangs_on_node(listed)) == len(KINDS)
    assert any(p.deleting for p in listed.gang_pods)
    assert any(p.node_name is None for p in listed.gang_pods)
    assert any(len(p.owners) >= 2 for p in listed.gang_pods)  # told up the owner chain
    # both name exactly the planted members, the same objects, and plan the same
    assert {p.key for p in listed.gang_pods} == expected(sim)
    assert held.gang_pods == listed.gang_pods
    assert plan_tier1(held) == plan_tier1(listed)
    assert [r for r in selected_pod_lists(listed_calls) if f"/namespaces/{NS}/" in r[1]]
    assert selected_pod_lists(held_calls) == []


async def test_a_plan_on_a_synced_informer_lists_no_namespace_of_pods_even_the_first(
    gang_gateways: Callable[[int], Awaitable[tuple[Gateway, Gateway, KubeSim]]],
) -> None:
    _, informed, sim = await gang_gateways(0)
    _, cold = await view_with_calls(informed, sim, NODE)
    _, warm = await view_with_calls(informed, sim, NODE)
    assert selected_pod_lists(cold) == [] and selected_pod_lists(warm) == []
    # the chains above built-in owners are read once: a second plan reads no owner
    owners = [r for r in warm if "/apis/apps/" in r[1] or "/apis/batch/" in r[1]]
    assert owners == []


@pytest.mark.parametrize(
    ("kept_s", "owners_informed", "read_first", "read_again"),
    [(300.0, False, 20, 0), (0.0, False, 20, 20), (0.0, True, 0, 0)],
)
async def test_a_gang_namespaces_other_owners_are_read_once_not_with_each_owner_cache(
    make_kubesim: Callable[..., Awaitable[KubeSim]],
    kept_s: float,
    owners_informed: bool,
    read_first: int,
    read_again: int,
) -> None:
    """Without the owner informers (not synced: stopped here, as after a failed watch), each
    other owner of a gang's namespace is read once per ``discovery_cache_s``; with them, never."""
    filler = [
        workload("Deployment", f"filler-{i}", None, NS, "decoy", replicas=2)
        | {"nodes": ["gpu-node-02", "cpu-node-01"]}
        for i in range(10)
    ]
    scenario, _ = generated(2, filler)
    sim = await make_kubesim(scenario)
    ensure_namespace(sim)
    # an owner cache per view (as after each write, or each ``fleet_cache_s``)
    gw = Gateway.from_settings(
        settings_for(sim.url, fleet_cache_s=0, discovery_cache_s=kept_s), informers=True
    )
    try:
        await gw.fleet()
        if not owners_informed:
            for informer in (gw.owner_informers() or {}).values():
                informer.stop()
        views = [await view_with_calls(gw, sim, NODE) for _ in range(2)]
    finally:
        gw.close()
    (first, cold), (second, warm) = views

    def fillers(calls: list[tuple[str, str, str]]) -> list[str]:
        return [r[1] for r in calls if r[0] == "GET" and "/filler-" in r[1] and "watch" not in r[2]]

    assert len(fillers(cold)) == read_first  # each Deployment and its ReplicaSet, once
    assert len(fillers(warm)) == read_again  # kept for ``discovery_cache_s``
    assert second.gang_pods == first.gang_pods and first.gang_pods


async def test_a_member_started_elsewhere_after_the_list_is_named_from_the_watch(
    gang_gateways: Callable[[int], Awaitable[tuple[Gateway, Gateway, KubeSim]]],
) -> None:
    _, informed, sim = await gang_gateways(3)
    g = f"g{sorted(KINDS).index('volcano podgroup annotation')}"
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": f"{g}-late", "annotations": {"scheduling.k8s.io/group-name": g}},
        "spec": {
            "nodeName": "gpu-node-02",
            "containers": [
                {
                    "name": "main",
                    "image": "busybox",
                    "resources": {"requests": {"cpu": "1", "memory": "1Gi"}},
                }
            ],
        },
    }
    status, _ = await kube_call(sim.url, "POST", f"/api/v1/namespaces/{NS}/pods", body=pod)
    assert status == 201
    loop = asyncio.get_running_loop()
    deadline = loop.time() + 60.0  # generous: nothing here is timed
    while True:
        view, calls = await view_with_calls(informed, sim, NODE)
        assert selected_pod_lists(calls) == []
        late = [p for p in view.gang_pods if p.name == f"{g}-late"]
        if late:
            break
        assert loop.time() < deadline, "the informer never saw the new member"
        await asyncio.sleep(0.1)
    assert (late[0].node_name, late[0].annotations) == (
        "gpu-node-02",
        {"scheduling.k8s.io/group-name": g},
    )


async def test_the_plans_read_gang_members_from_the_api_while_the_informer_is_not_synced(
    gang_gateways: Callable[[int], Awaitable[tuple[Gateway, Gateway, KubeSim]]],
) -> None:
    listing, informed, sim = await gang_gateways(1)
    informers = informed.fleet_informers()
    assert informers is not None
    informers[0].stop()  # as a failed watch does: not synced until it lists again
    held, calls = await view_with_calls(informed, sim, NODE)
    listed, _ = await view_with_calls(listing, sim, NODE)
    assert [r for r in selected_pod_lists(calls) if r[1] == f"/api/v1/namespaces/{NS}/pods"]
    assert held.gang_pods == listed.gang_pods and held.gang_pods


def test_a_record_keeps_what_tells_the_gang_of_a_pod_on_no_node_and_nothing_of_a_finished_one() -> (
    None
):
    pending = {
        "metadata": {
            "namespace": NS,
            "name": "w-1",
            "labels": {"jobset.sigs.k8s.io/jobset-name": "js"},
            "annotations": {"scheduling.k8s.io/group-name": "pg", "other": "x"},
            "ownerReferences": [
                {"apiVersion": "batch/v1", "kind": "Job", "name": "js-w-1", "controller": True}
            ],
        },
        "spec": {},
        "status": {"phase": "Pending"},
    }
    finished = {**pending, "status": {"phase": "Succeeded"}, "spec": {"nodeName": "n"}}
    [(_, _, record)] = members.records([pending])
    [info] = members.members(
        [(NS, "w-1", record)],
        NODE,
        ["jobset.x-k8s.io/JobSet ml-train/js"],
        {'["batch/v1","Job","js-w-1"]': []},
    )
    assert (info.node_name, info.phase, info.annotations) == (
        None,
        "Pending",
        {"scheduling.k8s.io/group-name": "pg"},
    )
    assert pod_record(finished) == pod_record({"status": {"phase": "Failed"}})
