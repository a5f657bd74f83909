"""The three cases the old fixed precedence got wrong, built node by node:
a training pod eating host RAM, a host daemon outside Kubernetes, a GPU process of no pod.
Each is judged on its verdict, its talking points and its plans."""

from __future__ import annotations

import random

import pytest

from bot.core.diagnosis.findings import Diagnosis
from bot.core.model.cluster import EventInfo
from bot.core.model.evidence import GpuProcess, SlabCache
from bot.core.reporting.analysis import analyze
from tests.core.generating import (
    AT,
    GI,
    NODE,
    _daemons,
    _finish,
    _gpus,
    _kernel,
    _Node,
    _pod,
    _system,
    _view,
    plant,
)


def _short_node(n: _Node) -> Diagnosis:
    n.events.append(EventInfo(involved_kind="Node", involved_name=NODE, reason="SystemOOM"))
    return analyze(_finish(n, _kernel(n), pressured=True), _view(n), now=AT)


def _training_eats_host_ram() -> Diagnosis:
    n = _Node(rng=random.Random(3), total=251 * GI)
    _daemons(n)
    workers = [("pt_data_worker", 21 * GI)] * 9
    train = _pod(
        n,
        "train-0",
        228 * GI,
        gpu=8,
        request=32 * GI,
        limit=None,
        owner=("StatefulSet", "train"),
        shmem=4 * GI,
        procs=[("python", 30 * GI), *workers],
    )
    _gpus(n, 8, train)
    _pod(n, "preprocess-5f6d-abcde", 8 * GI, limit=12 * GI, owner=("Deployment", "preprocess"))
    return _short_node(n)


def test_a_training_pod_eating_host_ram_is_named_with_its_numbers() -> None:
    d = _training_eats_host_ram()
    v = d.verdict
    assert (v.cause, v.subject) == ("host_memory_workload", "ml/train-0")
    assert v.params["gpu_request"] == 8 and v.params["limit_bytes"] == 0
    assert v.params["request_bytes"] == 32 * GI and "pt_data_worker" in str(v.params["processes"])
    assert v.shortage_bytes > 0 and v.share > 0.7 and v.confidence == "high"
    keys = {p.key: p for p in d.talking_points}
    assert keys["ai.training_host_memory_cause"].stance == "contradicts"
    assert "ai.gpu_memory_not_cause" not in keys
    assert "ai.training_priority_missing" not in keys  # never protect the consumer


def test_plans_for_the_training_pod_target_it_and_state_their_relief() -> None:
    d = _training_eats_host_ram()
    tiers = {p.tier: p for p in d.plans}
    assert tiers[1].blast_radius == ["ml/preprocess-5f6d-abcde"]
    assert not tiers[1].relieves and 0 < tiers[1].relief_bytes < tiers[1].shortage_bytes
    assert not tiers[2].available and "consumer_not_protected" in tiers[2].warnings
    assert tiers[3].available and tiers[3].target == "StatefulSet/ml/train"
    assert tiers[3].restarts == ["ml/train-0"] and "limit_set_from_shortage" in tiers[3].warnings
    assert tiers[3].relieves and tiers[3].values is not None
    assert tiers[3].values.memory_limit_bytes < 228 * GI - d.verdict.shortage_bytes + GI


def test_a_host_daemon_is_named_by_its_unit_with_a_manual_runbook() -> None:
    n = _Node(rng=random.Random(5), total=251 * GI)
    _daemons(n)
    _gpus(n, 8, _pod(n, "train-0", 20 * GI, gpu=8, limit=40 * GI, owner=("StatefulSet", "train")))
    _system(n, "nv-hostengine", 150 * GI, "/system.slice/nv-hostengine.service")
    _pod(n, "etl-7c9d-xyz12", 30 * GI, limit=48 * GI)
    d = _short_node(n)
    v = d.verdict
    assert (v.cause, v.subject) == ("system_process", "system.slice/nv-hostengine.service")
    tier3 = next(p for p in d.plans if p.tier == 3)
    assert not tier3.available and tier3.steps == []
    commands = [r.command for r in tier3.runbook]
    assert "systemctl status nv-hostengine.service" in commands
    assert "systemctl restart nv-hostengine.service" in commands
    keys = {p.key for p in d.talking_points}
    assert {"ops.consumer_outside_pods", "ai.pods_not_cause"} <= keys
    assert not any(p.tier == 2 and "ml/train-0" not in p.restarts for p in d.plans if p.available)


def test_a_gpu_process_of_no_pod_is_an_orphan_end_to_end() -> None:
    n = _Node(rng=random.Random(9), total=251 * GI)
    _daemons(n)
    _gpus(
        n,
        8,
        _pod(n, "train-0", 20 * GI, gpu=8, limit=40 * GI, owner=("StatefulSet", "train")),
        max_share=0.3,
    )
    orphan = _system(n, "python3", 2 * GI, "/")
    g = n.gpus[5]
    n.gpus[5] = g.model_copy(update={"memory_used_bytes": 70 * GI, "memory_free_bytes": 10 * GI})
    n.gpu_procs.append(
        GpuProcess(
            gpu_index=5,
            gpu_uuid=g.uuid,
            pid=orphan.pid,
            used_gpu_memory_bytes=60 * GI,
            command="python3",
        )
    )
    d = analyze(_finish(n, _kernel(n), pressured=False), _view(n), now=AT)
    v = d.verdict
    assert (v.cause, v.subject, v.params["pid"]) == ("gpu_orphan", g.uuid, orphan.pid)
    assert any(f.code == "GPU_PROCESS_NO_POD" for f in d.findings)
    tier3 = next(p for p in d.plans if p.tier == 3)
    assert f"kill -TERM {orphan.pid}" in [r.command for r in tier3.runbook]


def test_a_slab_verdict_names_the_biggest_caches_when_slabinfo_was_readable() -> None:
    n = _Node(rng=random.Random(4), total=251 * GI)
    _daemons(n)
    k = _kernel(n)
    k.s_unreclaim = 150 * GI
    caches = [
        SlabCache(name="dentry", active_objs=9, num_objs=9, objsize_bytes=192, bytes=120 * GI),
        SlabCache(name="kmalloc-64", active_objs=9, num_objs=9, objsize_bytes=64, bytes=20 * GI),
    ]
    b = _finish(n, k, pressured=True).model_copy(update={"slab_caches": caches})
    d = analyze(b, _view(n), now=AT)
    assert (d.verdict.cause, d.verdict.subject) == ("kernel_slab", NODE)
    assert d.verdict.params["top_cache"] == "dentry"
    assert d.verdict.params["top_caches"] == "dentry, kmalloc-64"


def test_a_gpu_process_the_collector_could_not_see_is_not_called_an_orphan() -> None:
    n = _Node(rng=random.Random(9), total=251 * GI)
    _daemons(n)
    _gpus(
        n,
        8,
        _pod(n, "train-0", 20 * GI, gpu=8, limit=40 * GI, owner=("StatefulSet", "train")),
        max_share=0.3,
    )
    g = n.gpus[2]
    n.gpus[2] = g.model_copy(update={"memory_used_bytes": 70 * GI, "memory_free_bytes": 10 * GI})
    n.gpu_procs.append(
        GpuProcess(gpu_index=2, gpu_uuid=g.uuid, pid=424242, used_gpu_memory_bytes=60 * GI)
    )
    d = analyze(_finish(n, _kernel(n), pressured=False), _view(n), now=AT)
    assert d.verdict.cause != "gpu_orphan"


@pytest.mark.parametrize(
    ("cls", "team_key", "stance"),
    [
        ("system_process", "ai.pods_not_cause", "supports"),
        ("kernel_memory", "ai.pods_not_cause", "supports"),
        ("hugepages", "ai.pods_not_cause", "supports"),
        ("shmem_host", "ai.pods_not_cause", "supports"),
        ("shmem_pod", "ai.shmem_held", "contradicts"),
        ("gpu_training", "ai.training_host_memory_cause", "contradicts"),
        ("pod", "ai.host_memory_workload", "neutral"),
    ],
)
def test_the_team_whose_numbers_show_it_at_fault_hears_it(
    cls: str, team_key: str, stance: str
) -> None:
    planted = plant(cls, random.Random(3))
    d = analyze(planted.bundle, planted.view, now=AT)
    points = {p.key: p for p in d.talking_points}
    assert points[team_key].stance == stance and points[team_key].audience == "ai_team"
    outside = team_key == "ai.pods_not_cause"
    assert ("ops.consumer_outside_pods" in points) == outside
