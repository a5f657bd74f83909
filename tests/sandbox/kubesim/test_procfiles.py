"""The node memory model: parts add up, MemAvailable follows the pods, PSI follows MemAvailable."""

from __future__ import annotations

import pytest

from gpunode_sandbox.kubesim import load_scenario
from gpunode_sandbox.kubesim import scenarios as sc
from gpunode_sandbox.kubesim.procfiles import (
    estimate_available,
    meminfo,
    parts,
    pressure_scale,
    pressure_text,
)
from gpunode_sandbox.kubesim.usage import ZERO, Figures

GIB = 2**30


def pods(anon_gib: float, file_gib: float = 0.0) -> Figures:
    anon, file = int(anon_gib * GIB), int(file_gib * GIB)
    return Figures(anon, file, file // 2, 0, 0, 0, ())


def node(*, mem_available: str | None = None) -> sc.Node:
    """100 GiB, 10 GiB of kernel/system memory, PSI some avg10 40 / full avg10 20."""
    return sc.Node(
        name="n1",
        capacity={"memory": "100Gi"},
        allocatable={"memory": "96Gi"},
        kernel=sc.Kernel(
            slab_reclaimable="1Gi",
            slab_unreclaimable="4Gi",
            page_cache="2Gi",
            buffers="0",
            system_anon="2Gi",
            page_tables="0",
            kernel_stack="0",
            percpu="0",
            other="1Gi",
            mem_available=mem_available,
        ),
        pressure=sc.Pressure(some_avg10=40.0, some_avg60=30.0, full_avg10=20.0),
    )


def test_mem_available_is_the_kernel_estimate_when_the_scenario_states_none() -> None:
    n, start = node(), pods(80)
    m = meminfo(n, start, start=start)
    low = 100 * GIB // 1000
    # free + file LRU + SReclaimable, less min(half, low) twice and the reserve
    assert m["MemAvailable"] == m["MemFree"] + 2 * GIB + 1 * GIB - 3 * low
    assert m["MemAvailable"] == estimate_available(parts(n, start))


def test_a_stated_mem_available_holds_at_the_start_and_moves_with_the_pods() -> None:
    n, start = node(mem_available="1Gi"), pods(80, 4)
    assert meminfo(n, start, start=start)["MemAvailable"] == 1 * GIB
    fewer = pods(50, 4)  # 30 GiB of anon released
    m = meminfo(n, fewer, start=start)
    assert m["MemAvailable"] == 31 * GIB
    assert m["MemFree"] == meminfo(n, start, start=start)["MemFree"] + 30 * GIB


def test_mem_available_never_goes_below_zero_when_pods_grow() -> None:
    n, start = node(mem_available="1Gi"), pods(80)
    assert meminfo(n, pods(82), start=start)["MemAvailable"] == 0


def test_pods_that_do_not_fit_in_mem_total_are_an_error() -> None:
    with pytest.raises(ValueError, match="exceeds MemTotal"):
        meminfo(node(), pods(95), start=ZERO)


def test_a_stated_mem_available_beyond_free_and_reclaimable_is_an_error() -> None:
    with pytest.raises(ValueError, match="mem_available exceeds"):
        meminfo(node(mem_available="50Gi"), pods(80), start=pods(80))


@pytest.mark.parametrize(
    ("anon_now_gib", "scale"),
    [
        (80, 1.0),  # the starting state: the scenario's PSI
        (82, 1.0),  # tighter than the start: still the scenario's PSI, not more
        (75.5, 0.5),  # MemAvailable 5.5 GiB, halfway from 1 GiB to 10 GiB
        (71, 0.0),  # MemAvailable 10 GiB = 10% of MemTotal: no stalls
        (20, 0.0),
    ],
)
def test_pressure_scales_from_the_scenario_at_the_start_to_zero_at_ten_percent(
    anon_now_gib: float, scale: float
) -> None:
    n, start = node(mem_available="1Gi"), pods(80)
    assert pressure_scale(n, pods(anon_now_gib), start=start) == pytest.approx(scale, abs=1e-3)


def test_a_node_that_starts_with_room_keeps_its_pressure_numbers() -> None:
    n = node()
    assert pressure_scale(n, pods(10), start=pods(20)) == 1.0


def test_pressure_text_scales_every_average_and_keeps_the_totals() -> None:
    pr = sc.Pressure(some_avg10=40, some_avg60=30, some_avg300=20, some_total_us=5, full_avg10=10)
    assert pressure_text(pr, 0.5) == (
        "some avg10=20.00 avg60=15.00 avg300=10.00 total=5\n"
        "full avg10=5.00 avg60=0.00 avg300=0.00 total=0\n"
    )


def test_the_seed_node_starts_where_the_story_does() -> None:
    from gpunode_sandbox.kubesim.usage import starting_figures

    scenario = load_scenario("seed")
    n = scenario.node("gpu-node-01")
    assert n is not None
    start = starting_figures(scenario, "gpu-node-01")
    m = meminfo(n, start, start=start)
    assert m["MemAvailable"] == 3584 * 2**20
    assert m["Buffers"] + m["Cached"] + m["SReclaimable"] == 14 * GIB
    assert m["SUnreclaim"] == 36 * GIB
    assert pressure_scale(n, start, start=start) == 1.0
