"""Every GPU node, every install: a MIG-mixed node, a DRA node and an AMD node are GPU nodes
to `top`, preflight and the rules, and each is diagnosed with GPU evidence or a true gap; NVML
is tried through the RuntimeClass, then through the node's default runtime; the kernel log's
refusal on a non-privileged collector is staged and worded as it really happens."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from typing import Any

import pytest

from bot.core.model.cluster import NodeInfo, gpu_resources, is_gpu_node
from bot.core.model.thresholds import DEFAULT
from bot.core.reporting.analysis import analyze
from gpunode_sandbox.kubesim import scenarios as sc

Make = Callable[..., Awaitable[tuple[Any, Any]]]


@pytest.mark.parametrize(
    ("allocatable", "drivers", "gpu"),
    [
        ({"nvidia.com/gpu": "8"}, [], True),
        ({"nvidia.com/gpu.shared": "32"}, [], True),
        ({"nvidia.com/mig-1g.10gb": "7", "nvidia.com/mig-3g.40gb": "2"}, [], True),
        ({"amd.com/gpu": "8"}, [], True),
        ({"cpu": "96", "memory": "251Gi"}, ["gpu.nvidia.com"], True),
        ({"nvidia.com/gpu": "0"}, [], False),
        ({"cpu": "96", "memory": "251Gi"}, ["net.example.com"], False),
        ({"cpu": "96", "hugepages-1Gi": "80"}, [], False),
    ],
)
def test_one_definition_of_a_gpu_node(
    allocatable: dict[str, str], drivers: list[str], gpu: bool
) -> None:
    assert is_gpu_node(allocatable, drivers) is gpu
    node = NodeInfo(name="n", allocatable=allocatable, dra_drivers=drivers)
    assert node.has_gpus is gpu
    assert set(gpu_resources(allocatable)) <= set(allocatable)


def _recording_jobs(sim: Any) -> None:
    """Keep every Job the API accepted (the bot deletes its Job when done)."""
    sim.created_jobs = []

    def keep(plural: str, old: Any, new: Any) -> None:
        if plural == "jobs" and old is None and new is not None:
            sim.created_jobs.append(new)

    sim.api.on_change.append(keep)


async def _diagnosed(make_gateway: Make, scenario: str, node: str) -> tuple[Any, Any, Any, Any]:
    gw, sim = await make_gateway(scenario)
    _recording_jobs(sim)
    info = await gw.get_node(node)
    bundle = await gw.run_diagnostic(node, known=info)
    view = await gw.get_cluster_view(node)
    return gw, sim, bundle, analyze(bundle, view, thresholds=DEFAULT, now=datetime.now(UTC))


def _job_pod_spec(sim: Any) -> dict[str, Any]:
    [job] = sim.created_jobs
    return job["spec"]["template"]["spec"]  # type: ignore[no-any-return]


def _gap(bundle: Any, source: str) -> str:
    found = [g.reason for g in bundle.gaps if g.source == source]
    assert found, [g.source for g in bundle.gaps]
    return found[0]


async def test_every_gpu_install_is_a_gpu_node_to_top(make_gateway: Make) -> None:
    for scenario, node in (
        ("gpu-mig-mixed", "mig-node-01"),
        ("gpu-dra", "dra-node-01"),
        ("gpu-amd", "amd-node-01"),
    ):
        gw, _sim = await make_gateway(scenario)
        listed = {n.name for n in await gw.list_gpu_nodes()}
        loads = {load.node.name for load in await gw.gpu_node_loads()}
        assert node in listed and node in loads, scenario


async def test_a_mig_node_gets_nvml_and_a_gap_naming_the_monitor_capability(
    make_gateway: Make,
) -> None:
    _gw, sim, bundle, diagnosis = await _diagnosed(make_gateway, "gpu-mig-mixed", "mig-node-01")
    assert _job_pod_spec(sim).get("runtimeClassName") == "nvidia"
    assert len(bundle.gpus) == 2  # NVML lists the MIG-enabled GPUs
    assert bundle.gpu_processes == []
    assert "Insufficient Permissions" in _gap(bundle, "nvml:gpu0:processes")
    why = _gap(bundle, "gpu:evidence")
    assert "MIG monitor capability" in why and 'RuntimeClass "nvidia"' in why
    assert "install the" not in why.lower()
    assert diagnosis.verdict.cause == "healthy"


async def test_a_dra_node_is_diagnosed_with_gpu_evidence(make_gateway: Make) -> None:
    gw, sim, bundle, _diagnosis = await _diagnosed(make_gateway, "gpu-dra", "dra-node-01")
    info = await gw.get_node("dra-node-01")
    assert info.dra_drivers == ["gpu.nvidia.com"] and info.gpu_resources == {}
    assert _job_pod_spec(sim).get("runtimeClassName") == "nvidia"
    assert len(bundle.gpus) == 4
    assert {p.gpu_index for p in bundle.gpu_processes} == {0, 1, 2, 3}
    assert not [g for g in bundle.gaps if g.source.startswith(("nvml", "gpu:"))]


async def test_an_amd_node_gets_no_nvidia_runtime_and_a_true_gap(make_gateway: Make) -> None:
    _gw, sim, bundle, diagnosis = await _diagnosed(make_gateway, "gpu-amd", "amd-node-01")
    spec = _job_pod_spec(sim)
    assert "runtimeClassName" not in spec
    env = {e["name"] for c in spec["containers"] for e in c.get("env") or []}
    assert "NVIDIA_VISIBLE_DEVICES" not in env
    assert bundle.gpus == []
    why = _gap(bundle, "gpu:evidence")
    assert "amd.com" in why and "NVML only" in why
    not_verified = [f for f in diagnosis.findings if f.code == "GPU_NOT_VERIFIED"]
    assert not_verified and "amd.com" in str(not_verified[0].params["reason"])


async def test_without_the_runtime_class_nvml_comes_through_the_default_runtime(
    make_gateway: Make,
) -> None:
    seed = sc.load_scenario("seed")
    nodes = [n.model_copy(update={"nvidia_default_runtime": True}) for n in seed.nodes]
    scenario = seed.model_copy(update={"runtime_classes": [], "nodes": nodes})
    gw, sim = await make_gateway(scenario)
    _recording_jobs(sim)
    bundle = await gw.run_diagnostic("gpu-node-01")
    spec = _job_pod_spec(sim)
    assert "runtimeClassName" not in spec
    env = {e["name"]: e.get("value") for c in spec["containers"] for e in c.get("env") or []}
    assert env["NVIDIA_VISIBLE_DEVICES"] == "all"  # kept: the default runtime honours it
    assert len(bundle.gpus) == 8
    assert not [g for g in bundle.gaps if g.source.startswith(("nvml", "gpu:", "k8s:runtime"))]


async def test_when_neither_way_gives_nvml_the_gap_says_what_was_tried(make_gateway: Make) -> None:
    scenario = sc.load_scenario("seed").model_copy(update={"runtime_classes": []})
    gw, _sim = await make_gateway(scenario)
    bundle = await gw.run_diagnostic("gpu-node-01")
    assert bundle.meminfo is not None and bundle.gpus == []
    why = _gap(bundle, "gpu:evidence")
    assert 'RuntimeClass "nvidia" (it does not exist)' in why
    assert "NVML through the node's default runtime" in why
    assert "default runtime is not NVIDIA's" in why
    assert "install the" not in why.lower()


async def test_the_non_privileged_collector_is_refused_the_kernel_log_and_says_why(
    make_gateway: Make,
) -> None:
    # gpu-amd's node does not admit /dev/kmsg to unprivileged containers (the default)
    _gw, _sim, bundle, _diagnosis = await _diagnosed(make_gateway, "gpu-amd", "amd-node-01")
    assert bundle.kernel_log is None
    why = _gap(bundle, "kmsg:/dev/kmsg")
    assert "(EPERM)" in why and "only to privileged containers" in why
    assert "grant CAP_SYSLOG" not in why
    assert "node-problem-detector" in why


async def test_a_failing_resourceslice_read_leaves_top_to_the_extended_resources(
    make_gateway: Make,
) -> None:
    gw, sim = await make_gateway("gpu-mig-mixed")
    sim.faults.add("GET", "/resourceslices", status=500, times=-1)
    listed = {n.name for n in await gw.list_gpu_nodes()}
    assert listed == {"mig-node-01"}  # its MIG slices still make it a GPU node
    info = await gw.get_node("mig-node-01")
    assert info.dra_drivers == [] and info.has_gpus
