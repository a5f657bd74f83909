"""A Karpenter NodePool with no node yet is read from the API (the stand-in serves
``karpenter.sh/v1`` NodePools), and tier 1 says an evicted pod that only its nodes would take
makes Karpenter launch one."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from bot.core.remedies.planning import plan_tier1
from bot.kube.gateway import Gateway
from gpunode_sandbox.kubesim import KubeSim, load_scenario
from tests.kube.remedy_scenarios import seed_with

Make = Callable[..., Awaitable[tuple[Gateway, KubeSim]]]
NODE = "gpu-node-01"


def _nodepool(memory_used: str) -> dict[str, Any]:
    return {
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodePool",
        "metadata": {"name": "nvme"},
        "spec": {
            "template": {
                "metadata": {"labels": {"disk": "nvme"}},
                "spec": {
                    "nodeClassRef": {
                        "group": "karpenter.k8s.aws",
                        "kind": "EC2NodeClass",
                        "name": "default",
                    },
                    "requirements": [
                        {
                            "key": "karpenter.sh/capacity-type",
                            "operator": "In",
                            "values": ["on-demand"],
                        },
                    ],
                    "taints": [],
                },
            },
            "limits": {"cpu": "256", "memory": "1Ti"},
        },
        "status": {"resources": {"cpu": "0", "memory": memory_used, "nodes": "0"}},
    }


def _preprocess_on_nvme() -> dict[str, Any]:
    base = next(
        w.model_dump(mode="json") for w in load_scenario("seed").workloads if w.name == "preprocess"
    )
    base["pod_spec"] = dict(base.get("pod_spec") or {}) | {"nodeSelector": {"disk": "nvme"}}
    return base


@pytest.mark.parametrize(
    ("used", "code", "why"),
    [("0", "evicted_scales_up", None), ("1000Gi", "evicted_pending", "pool_limit")],
)
async def test_a_nodepool_with_no_node_yet_takes_the_evicted_pod(
    make_gateway: Make, used: str, code: str, why: str | None
) -> None:
    gw, sim = await make_gateway(
        seed_with(
            [_preprocess_on_nvme()],
            drop=("preprocess",),
            crds=["nodepools.karpenter.sh"],
            objects=[_nodepool(used)],
        )
    )
    assert not [
        n
        for n in sim.api.store.list("nodes")
        if n["metadata"].get("labels", {}).get("karpenter.sh/nodepool")
    ]
    view = await gw.get_cluster_view(NODE)
    [pool] = view.pools or []
    assert (pool.name, pool.labels, pool.gpu) == ("nvme", {"disk": "nvme"}, False)
    plan = plan_tier1(view)
    [prep] = [p for p in view.pods if p.name.startswith("preprocess-")]
    [note] = [n for n in plan.notes if n.params.get("pod") == prep.key]
    assert (note.code, note.params.get("why")) == (code, why)
    if code == "evicted_scales_up":
        assert (note.params["pool"], note.params["scaler"]) == ("nvme", "Karpenter")


async def test_without_karpenter_the_pod_stays_pending(make_gateway: Make) -> None:
    gw, _ = await make_gateway(seed_with([_preprocess_on_nvme()], drop=("preprocess",)))
    view = await gw.get_cluster_view(NODE)
    assert view.pools is None
    plan = plan_tier1(view)
    [prep] = [p for p in view.pods if p.name.startswith("preprocess-")]
    [note] = [n for n in plan.notes if n.params.get("pod") == prep.key]
    assert (note.code, note.params["why"]) == ("evicted_pending", "no_match")


def _machine_deployment(memory: str, replicas: int, max_size: int) -> list[dict[str, Any]]:
    capi = "cluster.x-k8s.io"
    md: dict[str, Any] = {
        "apiVersion": f"{capi}/v1beta1",
        "kind": "MachineDeployment",
        "metadata": {
            "name": "nvme-workers",
            "namespace": "capi-system",
            "uid": "uid-md",
            "annotations": {
                f"{capi}/cluster-api-autoscaler-node-group-min-size": "0",
                f"{capi}/cluster-api-autoscaler-node-group-max-size": str(max_size),
                "capacity.cluster-autoscaler.kubernetes.io/cpu": "32",
                "capacity.cluster-autoscaler.kubernetes.io/memory": memory,
                "capacity.cluster-autoscaler.kubernetes.io/maxPods": "110",
                "capacity.cluster-autoscaler.kubernetes.io/labels": "disk=nvme,tier=batch",
            },
        },
        "spec": {"clusterName": "prod", "replicas": replicas, "template": {"spec": {}}},
    }
    # its MachineSet carries the same annotations: the deployment is the node group, once
    ms = {
        **md,
        "kind": "MachineSet",
        "metadata": {
            **md["metadata"],
            "name": "nvme-workers-5d8f",
            "uid": "uid-ms",
            "ownerReferences": [
                {
                    "apiVersion": f"{capi}/v1beta1",
                    "kind": "MachineDeployment",
                    "name": "nvme-workers",
                    "uid": "uid-md",
                    "controller": True,
                }
            ],
        },
    }
    namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "capi-system"}}
    return [namespace, md, ms]


@pytest.mark.parametrize(
    ("memory", "replicas", "max_size", "code", "why"),
    [
        ("64Gi", 0, 3, "evicted_scales_up", None),
        ("32Gi", 0, 3, "evicted_pending", "no_match"),  # a new node is too small for 48Gi
        ("64Gi", 3, 3, "evicted_pending", "pool_limit"),
    ],
)
async def test_a_cluster_api_node_group_scales_from_zero_for_the_evicted_pod(
    make_gateway: Make, memory: str, replicas: int, max_size: int, code: str, why: str | None
) -> None:
    gw, _ = await make_gateway(
        seed_with(
            [_preprocess_on_nvme()],
            drop=("preprocess",),
            crds=["machinedeployments.cluster.x-k8s.io", "machinesets.cluster.x-k8s.io"],
            objects=_machine_deployment(memory, replicas, max_size),
        )
    )
    view = await gw.get_cluster_view(NODE)
    [group] = view.pools or []
    assert (group.name, group.scaler, group.labels["disk"], group.max_nodes) == (
        "capi-system/nvme-workers",
        "cluster autoscaler",
        "nvme",
        max_size,
    )
    plan = plan_tier1(view)
    [prep] = [p for p in view.pods if p.name.startswith("preprocess-")]
    [note] = [n for n in plan.notes if n.params.get("pod") == prep.key]
    assert (note.code, note.params.get("why")) == (code, why)
