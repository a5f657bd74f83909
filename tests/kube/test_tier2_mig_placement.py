"""Tier 2 on a cordoned node counts the exact accelerator a pod holds, through the real
gateway over the stand-in: a training pod on MIG slices (``nvidia.com/mig-3g.40gb``) is
stranded when no other schedulable node offers that profile free (whole GPUs elsewhere do
not help), and goes to the node that does."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from bot.core.remedies.planning import plan_tier2
from bot.kube.gateway import Gateway
from gpunode_sandbox.kubesim import KubeSim, Scenario, load_scenario

Make = Callable[..., Awaitable[tuple[Gateway, KubeSim]]]
NODE = "gpu-node-01"
PROFILE = "nvidia.com/mig-3g.40gb"


def _mig_seed(*, other_node_profiles: dict[str, str]) -> Scenario:
    """The seed with train-llm on two 3g.40gb MIG slices of gpu-node-01 instead of 8 GPUs;
    gpu-node-02 offers ``other_node_profiles`` besides its whole GPUs."""
    base: dict[str, Any] = load_scenario("seed").model_dump(mode="json")
    base.pop("expected", None)
    for node in base["nodes"]:
        extra = {PROFILE: "2"} if node["name"] == NODE else other_node_profiles
        node["capacity"] = {**node["capacity"], **extra}
        node["allocatable"] = {**node["allocatable"], **extra}
    for w in base["workloads"]:
        if w["name"] != "train-llm":
            continue
        for c in w["containers"]:
            c["requests"] = {k: v for k, v in c["requests"].items() if k != "nvidia.com/gpu"}
            c["limits"] = {k: v for k, v in c["limits"].items() if k != "nvidia.com/gpu"}
            c["requests"][PROFILE] = "2"
            c["limits"][PROFILE] = "2"
            for proc in c.get("processes") or []:
                proc["gpu_memory"] = {0: "30Gi", 1: "30Gi"}
    return Scenario.model_validate(base)


async def test_a_mig_training_pod_with_no_free_profile_elsewhere_makes_tier2_refuse(
    make_gateway: Make,
) -> None:
    # gpu-node-02 has whole GPUs free (seed leaves 4) and 1g slices, but no 3g.40gb
    gw, _ = await make_gateway(_mig_seed(other_node_profiles={"nvidia.com/mig-1g.10gb": "7"}))
    await gw.cordon(NODE, dry_run=False)
    view = await gw.get_cluster_view(NODE)
    [trainer] = [p for p in view.pods if p.name.startswith("train-llm")]
    assert trainer.gpu_request == 0 and trainer.accelerators == {PROFILE: 2}
    plan = plan_tier2(view)
    assert not plan.available and "restarts_cannot_return" in plan.warnings
    [note] = [n for n in plan.notes if n.code == "restart_pending"]
    assert note.params["pod"] == "ml-train/train-llm-0" and note.params["cordoned"] == "yes"


async def test_a_mig_training_pod_goes_to_the_node_with_its_profile_free(
    make_gateway: Make,
) -> None:
    gw, _ = await make_gateway(_mig_seed(other_node_profiles={PROFILE: "2"}))
    await gw.cordon(NODE, dry_run=False)
    plan = plan_tier2(await gw.get_cluster_view(NODE))
    assert plan.available and "restarts_cannot_return" not in plan.warnings
    [note] = [n for n in plan.notes if n.code == "restart_moves_cordoned"]
    assert (note.params["pod"], note.params["nodes"]) == ("ml-train/train-llm-0", "gpu-node-02")


def _dra_with_a_cpu_node() -> Scenario:
    """gpu-dra plus a CPU node with room for the trainer's CPU and memory (no GPUs)."""
    base: dict[str, Any] = load_scenario("gpu-dra").model_dump(mode="json")
    base.pop("expected", None)
    cpu = {"cpu": "96", "memory": "251Gi", "pods": "110"}
    base["nodes"].append({"name": "cpu-node-09", "capacity": cpu, "allocatable": cpu})
    return Scenario.model_validate(base)


async def test_a_dra_training_pod_is_never_sent_to_a_node_without_its_devices(
    make_gateway: Make,
) -> None:
    gw, _ = await make_gateway(_dra_with_a_cpu_node())
    await gw.cordon("dra-node-01", dry_run=False)
    view = await gw.get_cluster_view("dra-node-01")
    [trainer] = [p for p in view.pods if p.name.startswith("train-dra")]
    assert trainer.accelerator_request == 0 and trainer.gpu_devices  # GPUs through DRA only
    assert view.room is not None and "cpu-node-09" in {r.name for r in view.room}
    plan = plan_tier2(view)
    assert not [n for n in plan.notes if n.code.startswith("restart_moves")]
    assert not plan.available and "restarts_cannot_return" in plan.warnings


def _two_dra_nodes(*, second_busy: bool) -> Scenario:
    """gpu-dra's node, a CPU node, and dra-node-02 with four DRA GPUs: free, or all claimed
    by another training pod."""
    base: dict[str, Any] = load_scenario("gpu-dra").model_dump(mode="json")
    base.pop("expected", None)
    cpu = {"cpu": "96", "memory": "251Gi", "pods": "110"}
    base["nodes"].append({"name": "cpu-node-09", "capacity": cpu, "allocatable": cpu})
    second = dict(base["nodes"][0], name="dra-node-02")
    base["nodes"].append(second)
    if second_busy:
        other = dict(base["workloads"][0], name="train-other", nodes=["dra-node-02"])
        base["workloads"].append(other)
    return Scenario.model_validate(base)


async def test_a_dra_training_pod_goes_to_the_node_with_free_devices_of_its_driver(
    make_gateway: Make,
) -> None:
    gw, _ = await make_gateway(_two_dra_nodes(second_busy=False))
    await gw.cordon("dra-node-01", dry_run=False)
    view = await gw.get_cluster_view("dra-node-01")
    rooms = {r.name: r.free.get("dra:gpu.nvidia.com") for r in view.room or []}
    assert rooms["dra-node-02"] == 4 and rooms["dra-node-01"] == 0
    plan = plan_tier2(view)
    assert plan.available and "restarts_cannot_return" not in plan.warnings
    [note] = [n for n in plan.notes if n.code == "restart_moves_cordoned"]
    assert (note.params["pod"], note.params["nodes"]) == ("ml-train/train-dra-0", "dra-node-02")


async def test_a_dra_training_pod_is_stranded_when_every_other_device_is_claimed(
    make_gateway: Make,
) -> None:
    gw, _ = await make_gateway(_two_dra_nodes(second_busy=True))
    await gw.cordon("dra-node-01", dry_run=False)
    view = await gw.get_cluster_view("dra-node-01")
    assert {r.name: r.free.get("dra:gpu.nvidia.com") for r in view.room or []}["dra-node-02"] == 0
    plan = plan_tier2(view)
    assert not plan.available and "restarts_cannot_return" in plan.warnings
