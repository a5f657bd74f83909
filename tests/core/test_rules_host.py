"""Host rules, table-tested: page cache, available, PSI, limits overcommit, non-GPU workloads."""

from __future__ import annotations

import pytest

from bot.core.diagnosis.rules import host
from bot.core.model.evidence import MemoryPressure, PressureLine
from bot.core.model.thresholds import DEFAULT
from tests.core.analysis_builders import GI, bundle, cgroup, context, meminfo, memory_row, pod, view


@pytest.mark.parametrize(
    ("buffers", "cached", "sreclaimable", "available", "expected"),
    [
        (0.5, 9.5, 4, 3.5, ["PAGE_CACHE_SQUEEZED"]),
        (1, 30, 5, 3.5, []),
        (0, 0, 0, 3.5, ["PAGE_CACHE_SQUEEZED"]),
        (2, 16, 2.5, 3.5, []),
        # a small cache beside plenty of available memory is not a squeeze
        (0.5, 9.5, 2.8, 64, []),
        (0.5, 9.5, 2.8, 25.1, []),
        (0.5, 9.5, 2.8, 25.0, ["PAGE_CACHE_SQUEEZED"]),
    ],
)
def test_page_cache_squeezed_fires_under_eight_percent_when_memory_is_short(
    buffers: float, cached: float, sreclaimable: float, available: float, expected: list[str]
) -> None:
    info = meminfo(
        251, buffers=buffers, cached=cached, s_reclaimable=sreclaimable, mem_available=available
    )
    ctx = context(bundle(meminfo=info))
    assert [f.code for f in host.page_cache_squeezed(ctx, DEFAULT)] == expected


def test_page_cache_squeezed_without_memavailable_judges_the_cache_alone() -> None:
    ctx = context(bundle(meminfo=meminfo(251, buffers=0.5, cached=9.5, s_reclaimable=4)))
    assert [f.code for f in host.page_cache_squeezed(ctx, DEFAULT)] == ["PAGE_CACHE_SQUEEZED"]


@pytest.mark.parametrize(
    ("available", "severity"),
    [(3.5, "critical"), (10, "warning"), (12.6, None), (100, None)],
)
def test_memory_available_low_grades_by_share(available: float, severity: str | None) -> None:
    ctx = context(bundle(meminfo=meminfo(251, mem_available=available)))
    found = host.memory_available_low(ctx, DEFAULT)
    assert [f.severity for f in found] == ([severity] if severity else [])


@pytest.mark.parametrize(
    ("some10", "full10", "severity"),
    [(0.0, 0.0, None), (12.0, 1.0, "warning"), (30.0, 6.0, "critical"), (2.0, None, None)],
)
def test_psi_stall_grades_some_and_full(
    some10: float, full10: float | None, severity: str | None
) -> None:
    line = lambda v: PressureLine(avg10=v, avg60=v, avg300=v, total_us=1)  # noqa: E731
    psi = MemoryPressure(some=line(some10), full=line(full10) if full10 is not None else None)
    found = host.memory_pressure_stall(context(bundle(pressure=psi)), DEFAULT)
    assert [f.severity for f in found] == ([severity] if severity else [])


@pytest.mark.parametrize(
    ("req_pct", "lim_pct", "severity"),
    [(85, 99, "warning"), (60, 94, None), (85, 100, "critical"), (90, 140, "critical")],
)
def test_limits_overcommitted_uses_kubectls_percentages(
    req_pct: int, lim_pct: int, severity: str | None
) -> None:
    ctx = context(bundle(), view([], allocated=[memory_row(req_pct, lim_pct)]))
    found = host.limits_overcommitted(ctx, DEFAULT)
    assert [f.severity for f in found] == ([severity] if severity else [])
    if found:
        assert found[0].params["requests_percent"] == req_pct


@pytest.mark.parametrize(
    ("gpu", "ws", "limit", "expected"),
    [
        (0, 62, 64, ("critical", 1)),  # the domain's preprocessing pod
        (0, 40, None, ("warning", 1)),  # large, unbounded, node not under pressure
        (8, 62, 64, None),  # a GPU pod is never "non-GPU workload"
        (0, 20, 64, None),  # under 15% of 251 GiB
    ],
)
def test_non_gpu_workload_holding_host_memory(
    gpu: int, ws: float, limit: float | None, expected: tuple[str, int] | None
) -> None:
    p = pod("prep", gpu=gpu, lim=limit)
    ctx = context(
        bundle(meminfo=meminfo(251, mem_available=100), containers=[cgroup(p, ws, limit)]),
        view([p]),
    )
    found = host.host_mem_non_gpu_workload(ctx, DEFAULT)
    assert [(f.severity, f.params["biggest_consumer"]) for f in found] == (
        [expected] if expected else []
    )
    if found:
        assert found[0].params["working_set_bytes"] == int(ws * GI)
