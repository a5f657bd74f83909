"""A GPU workload is any accelerator: every nvidia.com/* resource (MIG slices, time-sliced
gpu.shared), amd.com/gpu, and pods with DRA resourceClaims. Read through the real gateway from
the stand-in, such pods are GPU workloads and tier 1 never evicts them; env values other than
the keys gpunode uses never reach the view (nor the store, which persists the view)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from bot.core.model.cluster import is_accelerator_resource
from bot.core.remedies.planning import plan_tier1
from bot.kube.gateway import Gateway
from gpunode_sandbox.kubesim import KubeSim
from gpunode_sandbox.kubesim import scenarios as sc

NODE = "gpu-node-01"
SECRET = "hf_live_token_do_not_store"


def _scenario() -> sc.Scenario:
    base = sc.load_scenario("seed")
    extra = {"nvidia.com/mig-1g.10gb": "7", "nvidia.com/gpu.shared": "16", "amd.com/gpu": "2"}
    nodes = [
        n.model_copy(
            update={
                "capacity": {**n.capacity, **extra},
                "allocatable": {**n.allocatable, **extra},
            }
        )
        if n.name == NODE
        else n
        for n in base.nodes
    ]

    def deploy(name: str, resources: dict[str, Any], **kw: Any) -> sc.Workload:
        return sc.Workload(
            kind="Deployment",
            name=name,
            namespace="ml-train",
            nodes=[NODE],
            containers=[
                sc.Container(
                    name="main",
                    requests={"cpu": "1", "memory": "1Gi", **resources},
                    limits={"memory": "2Gi", **resources},
                    env={"OMP_NUM_THREADS": "8", "HF_TOKEN": SECRET},
                )
            ],
            **kw,
        )

    workloads = [
        *base.workloads,
        deploy("mig-infer", {"nvidia.com/mig-1g.10gb": "1"}),
        deploy("shared-infer", {"nvidia.com/gpu.shared": "1"}),
        deploy("rocm-train", {"amd.com/gpu": "1"}),
        deploy("dra-train", {}, resource_claims=["gpu"]),
        deploy("cpu-batch", {}),
    ]
    return base.model_copy(update={"nodes": nodes, "workloads": workloads})


@pytest.mark.parametrize(
    ("name", "accelerator"),
    [
        ("nvidia.com/gpu", True),
        ("nvidia.com/mig-1g.10gb", True),
        ("nvidia.com/mig-3g.40gb", True),
        ("nvidia.com/gpu.shared", True),
        ("amd.com/gpu", True),
        ("cpu", False),
        ("memory", False),
        ("hugepages-2Mi", False),
        ("example.com/fpga-nic", False),
    ],
)
def test_accelerator_resources_are_recognised_by_name(name: str, accelerator: bool) -> None:
    assert is_accelerator_resource(name) is accelerator


async def test_every_accelerator_pod_is_a_gpu_workload_that_tier_1_never_evicts(
    make_gateway: Callable[..., Awaitable[tuple[Gateway, KubeSim]]],
) -> None:
    gw, _ = await make_gateway(_scenario())
    view = await gw.get_cluster_view(NODE)
    by_owner = {p.top_owner.name: p for p in view.pods if p.top_owner is not None}
    for name in ("mig-infer", "shared-infer", "rocm-train", "dra-train"):
        assert by_owner[name].accelerated, name
    assert by_owner["mig-infer"].accelerators == {"nvidia.com/mig-1g.10gb": 1}
    assert by_owner["dra-train"].resource_claims == ["gpu"]
    assert not by_owner["cpu-batch"].accelerated

    plan = plan_tier1(view)
    reasons = {p.pod: p.reason for p in plan.protected}
    evicted = {s.name for s in plan.steps if s.verb == "evict"}
    for name in ("mig-infer", "shared-infer", "rocm-train", "dra-train"):
        pod = by_owner[name]
        assert reasons[pod.key] == "gpu_workload"
        assert pod.name not in evicted
    assert by_owner["cpu-batch"].name in evicted


async def test_only_env_keys_gpunode_uses_reach_the_cluster_view(
    make_gateway: Callable[..., Awaitable[tuple[Gateway, KubeSim]]],
) -> None:
    gw, _ = await make_gateway(_scenario())
    view = await gw.get_cluster_view(NODE)
    pod = next(p for p in view.pods if p.name.startswith("cpu-batch"))
    assert pod.containers[0].env == {"OMP_NUM_THREADS": "8"}
    assert SECRET not in view.model_dump_json()
