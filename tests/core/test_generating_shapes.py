"""The generator plants the advice shapes as described (``generating.py``): each shape's
defining numbers hold on every drawn node, and its advice ranges are coherent."""

from __future__ import annotations

import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.core.generating import SHAPE_CLASSES, Planted, plant

SEEDS = st.integers(min_value=0, max_value=2**32 - 1)
SETTINGS = settings(
    max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True
)


def _ws(p: Planted) -> dict[str, int]:
    out: dict[str, int] = {}
    for c in p.bundle.containers:
        assert c.pod_uid is not None
        out[c.pod_uid] = out.get(c.pod_uid, 0) + (c.working_set_bytes or 0)
    return out


def _subject_pod(p: Planted):  # type: ignore[no-untyped-def]
    return next(x for x in p.view.pods if x.key == p.subject)


@SETTINGS
@given(seed=SEEDS)
def test_multi_replica_plants_8_to_14_replicas_of_one_deployment_here(seed: int) -> None:
    p = plant("multi_replica", random.Random(seed))
    owner = _subject_pod(p).top_owner
    assert 8 <= sum(x.top_owner == owner for x in p.view.pods) <= 14


@SETTINGS
@given(seed=SEEDS)
def test_spread_replicas_have_more_replicas_in_the_cluster_than_here(seed: int) -> None:
    p = plant("spread_replicas", random.Random(seed))
    here = sum(x.top_owner == _subject_pod(p).top_owner for x in p.view.pods)
    (workload,) = p.view.workloads
    assert workload.replicas == p.advice.restarts_total and workload.replicas > here


@SETTINGS
@given(seed=SEEDS)
def test_a_sidecar_leak_is_in_the_training_pods_sidecar_not_its_main_container(seed: int) -> None:
    p = plant("sidecar_leak", random.Random(seed))
    pod = _subject_pod(p)
    by_id = {c.container_id: c.working_set_bytes or 0 for c in p.bundle.containers}
    held = {c.name: by_id[c.container_id] for c in pod.containers}
    assert pod.gpu_request == 8 and held["log-shipper"] > held["main"]
    main = next(c for c in pod.containers if c.name == "main")
    assert held["main"] <= int(main.requests["memory"][:-2]) * 2**20  # inside its request
    assert p.advice.cap_container == "log-shipper"


@SETTINGS
@given(seed=SEEDS)
def test_a_cpu_only_node_has_no_gpu_anywhere(seed: int) -> None:
    p = plant("cpu_only", random.Random(seed))
    assert p.bundle.gpus == [] and p.bundle.gpu_processes == []
    assert not any(k.startswith("nvidia.com/") for k in p.view.node.allocatable)
    assert not any(x.accelerators for x in p.view.pods)


@SETTINGS
@given(seed=SEEDS)
def test_a_healthy_node_with_a_large_cache_is_not_short(seed: int) -> None:
    p = plant("healthy_cache", random.Random(seed))
    mi = p.bundle.meminfo
    assert mi is not None and mi.mem_available_bytes is not None
    assert mi.mem_available_bytes >= 0.2 * mi.mem_total_bytes
    assert mi.mem_free_bytes < mi.cached_bytes and p.advice.evict_max == 0


@SETTINGS
@given(seed=SEEDS)
def test_a_near_tie_has_a_runner_up_within_15_percent(seed: int) -> None:
    p = plant("near_tie", random.Random(seed))
    ws = _ws(p)
    top = ws[_subject_pod(p).uid]
    runner = max(v for uid, v in ws.items() if uid != _subject_pod(p).uid)
    assert 0.85 * top <= runner < top


@SETTINGS
@given(seed=SEEDS)
def test_a_gang_is_owned_by_its_pytorchjob_and_labelled_as_the_operator_does(seed: int) -> None:
    p = plant("gang", random.Random(seed))
    gang = [x for x in p.view.pods if "training.kubeflow.org/job-name" in x.labels]
    assert len(gang) >= 2
    assert all(x.top_owner is not None and x.top_owner.kind == "PyTorchJob" for x in gang)


@SETTINGS
@given(seed=SEEDS)
def test_a_besteffort_leak_is_smaller_than_the_training_inside_its_request(seed: int) -> None:
    p = plant("besteffort_leak", random.Random(seed))
    ws = _ws(p)
    leak = _subject_pod(p)
    train = next(x for x in p.view.pods if x.name == "train-0")
    assert leak.qos_class == "besteffort" and leak.memory_request_bytes == 0
    assert ws[leak.uid] < ws[train.uid] <= train.memory_request_bytes


@SETTINGS
@given(seed=SEEDS)
def test_time_sliced_gpus_are_labelled_and_shared_four_ways(seed: int) -> None:
    p = plant("time_sliced", random.Random(seed))
    labels = p.view.node.labels
    assert labels["nvidia.com/gpu.sharing-strategy"] == "time-slicing"
    assert p.view.node.allocatable["nvidia.com/gpu"] == "16" and len(p.bundle.gpus) == 4
    on_gpu0 = [g for g in p.bundle.gpu_processes if g.gpu_index == 0]
    assert len(on_gpu0) == 4 and p.subject == p.bundle.gpus[0].uuid


@SETTINGS
@given(seed=SEEDS)
def test_a_node_agent_leak_names_its_unit_for_the_runbook(seed: int) -> None:
    p = plant("node_agent", random.Random(seed))
    assert p.advice.runbook_unit is not None
    assert p.subject == f"system.slice/{p.advice.runbook_unit}"


@pytest.mark.parametrize("cls", SHAPE_CLASSES)
def test_the_planted_cap_range_is_at_least_half_of_what_the_container_holds(cls: str) -> None:
    p = plant(cls, random.Random(5))
    a = p.advice
    if a.cap_container is not None:
        assert a.cap_min is not None and a.cap_max is not None
        assert a.cap_max // 2 - 2**30 == a.cap_min < a.cap_max
