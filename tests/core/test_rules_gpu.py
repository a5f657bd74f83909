"""GPU rules: isolation, device memory, processes outside pods, NVML missing."""

from __future__ import annotations

import pytest

from bot.core.diagnosis.rules import gpu as gpu_rules
from bot.core.model.cluster import ResourceAllocation
from bot.core.model.evidence import Gap, GpuProcess
from bot.core.model.thresholds import DEFAULT
from tests.core.analysis_builders import bundle, context, gpu, pod, view


def _gpu_row(requested: int, limits: int) -> ResourceAllocation:
    return ResourceAllocation(
        resource="nvidia.com/gpu",
        requests=str(requested),
        limits=str(limits),
        requests_value=requested,
        limits_value=limits,
        allocatable_value=8,
    )


@pytest.mark.parametrize(
    ("requested", "limits", "code"),
    [
        (8, 8, "GPU_ISOLATION_HOLDS"),
        (4, 4, "GPU_ISOLATION_HOLDS"),
        (9, 9, "GPU_ISOLATION_BROKEN"),
        (8, 6, "GPU_ISOLATION_BROKEN"),
    ],
)
def test_gpu_isolation(requested: int, limits: int, code: str) -> None:
    ctx = context(
        bundle(), view([pod("t", gpu=requested)], allocated=[_gpu_row(requested, limits)])
    )
    assert [f.code for f in gpu_rules.gpu_isolation(ctx, DEFAULT)] == [code]


def test_gpu_isolation_sees_a_container_whose_request_differs_from_its_limit() -> None:
    p = pod("t", gpu=2)
    c = p.containers[0].model_copy(update={"requests": {"nvidia.com/gpu": "1"}})
    found = gpu_rules.gpu_isolation(
        context(bundle(), view([p.model_copy(update={"containers": [c]})])), DEFAULT
    )
    assert found[0].code == "GPU_ISOLATION_BROKEN"
    assert found[0].params["mismatched"] == "ml/t/main"


@pytest.mark.parametrize(
    ("used", "codes"),
    [
        ([64] * 8, ["GPU_MEMORY_OK"]),
        ([64, 73], ["GPU_MEMORY_HIGH"]),
        ([79.5, 64], ["GPU_MEMORY_EXHAUSTED"]),
        ([79.5, 79.9], ["GPU_MEMORY_EXHAUSTED", "GPU_MEMORY_EXHAUSTED"]),
        ([], []),
    ],
)
def test_gpu_memory_per_device(used: list[float], codes: list[str]) -> None:
    ctx = context(bundle(gpus=[gpu(i, u) for i, u in enumerate(used)]))
    assert [f.code for f in gpu_rules.gpu_memory(ctx, DEFAULT)] == codes


def test_gpu_memory_ok_reports_the_fullest_gpu_and_totals() -> None:
    f = gpu_rules.gpu_memory(context(bundle(gpus=[gpu(0, 64), gpu(1, 32)])), DEFAULT)[0]
    assert (f.params["max_percent"], f.params["gpu_count"]) == (80.0, 2)


@pytest.mark.parametrize(("pod_uid", "fires"), [(None, True), ("uid-t", False)])
def test_gpu_process_without_pod(pod_uid: str | None, fires: bool) -> None:
    gp = GpuProcess(gpu_index=0, gpu_uuid="GPU-0", pid=4242, pod_uid=pod_uid)
    ctx = context(bundle(gpus=[gpu(0, 10)], gpu_processes=[gp]), view([pod("t", gpu=1)]))
    assert bool(gpu_rules.gpu_process_no_pod(ctx, DEFAULT)) is fires


def test_missing_nvml_on_a_gpu_node_is_reported_not_guessed() -> None:
    ctx = context(bundle(gaps=[Gap(source="nvml", reason="NVML library not found")]), view([]))
    found = gpu_rules.gpu_not_verified(ctx, DEFAULT)
    assert found[0].params["reason"] == "NVML library not found"
