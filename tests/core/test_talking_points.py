"""Talking points: each claim bound to facts; stances follow the evidence; gaps are unverified."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from bot.core.diagnosis.findings import Diagnosis
from bot.core.model.cluster import ClusterView
from bot.core.model.evidence import EvidenceBundle, Gap
from bot.core.reporting import talking_points
from bot.core.reporting.analysis import analyze
from tests.core.analysis_builders import AT, bundle, cgroup, meminfo, memory_row, pod, view
from tests.core.test_analysis_scenarios import AT_NOW, BUNDLES, diagnose

GI = 1024**3


def _keys(name: str) -> dict[str, tuple[str, str]]:
    return {(p.key): (p.audience, p.stance) for p in diagnose(name).talking_points}


def test_seed_points_tell_both_teams_the_domain_story() -> None:
    keys = _keys("seed")
    assert keys["ai.gpu_memory_not_cause"] == ("ai_team", "supports")
    assert keys["ops.gpu_not_cause"] == ("ops_team", "contradicts")
    for key in (
        "ai.host_memory_workload",
        "ai.suggest_memory_limit",
        "ai.suggest_chunked_processing",
        "ai.suggest_dedicated_node_pool",
        "ops.limits_overcommitted",
        "ops.kernel_slab_eviction_blind",
        "ops.page_cache_squeezed",
        "ops.tier1_available",
        "ops.tier2_available",
        "ops.tier3_available",
    ):
        assert key in keys, key


def test_seed_host_memory_point_carries_the_numbers() -> None:
    point = next(p for p in diagnose("seed").talking_points if p.key == "ai.host_memory_workload")
    assert point.params["working_set_bytes"] == 62 * GI
    assert point.params["limit_bytes"] == 64 * GI
    assert any(f.source.startswith("cgroup:") for f in point.facts)


@pytest.mark.parametrize(
    ("name", "key", "stance"),
    [
        ("gpu-bound", "ai.gpu_memory_is_cause", "contradicts"),
        ("healthy", "ops.node_healthy", "contradicts"),
        ("slab-leak", "ops.kernel_slab_eviction_blind", "neutral"),
        ("limit-edge", "ai.container_near_limit", "neutral"),
        ("limit-edge", "ai.oom_killed", "neutral"),
    ],
)
def test_scenario_points(name: str, key: str, stance: str) -> None:
    assert _keys(name)[key][1] == stance


def test_gpu_is_not_cleared_when_it_is_the_cause() -> None:
    assert "ai.gpu_memory_not_cause" not in _keys("gpu-bound")


@pytest.mark.parametrize("name", ["seed", "slab-leak", "gpu-bound", "limit-edge", "healthy"])
def test_no_claim_without_a_fact(name: str) -> None:
    assert all(p.facts or p.unverified for p in diagnose(name).talking_points)


def test_missing_nvml_becomes_unverified_points_for_both_teams() -> None:
    bundle = EvidenceBundle.model_validate_json((BUNDLES / "seed" / "evidence.json").read_text())
    bundle = bundle.model_copy(
        update={
            "gpus": [],
            "gpu_processes": [],
            "gaps": [Gap(source="nvml", reason="NVML library not found")],
        }
    )
    view = ClusterView.model_validate_json((BUNDLES / "seed" / "cluster.json").read_text())
    points = analyze(bundle, view, now=AT_NOW).talking_points
    unverified = [(p.audience, p.key) for p in points if p.unverified]
    assert ("ai_team", "unverified.gpu_memory") in unverified
    assert ("ops_team", "unverified.gpu_memory") in unverified
    assert ("ops_team", "unverified.gap") in unverified
    assert "ai.gpu_memory_not_cause" not in {p.key for p in points}


def test_every_emitted_key_is_documented_in_the_module_table() -> None:
    doc = talking_points.__doc__ or ""
    documented = set(re.findall(r"^((?:ai|ops|unverified)\.[a-z0-9_]+)", doc, flags=re.M))
    emitted = {
        p.key
        for name in ("seed", "slab-leak", "gpu-bound", "limit-edge", "healthy")
        for p in diagnose(name).talking_points
    }
    assert emitted <= documented
    assert Path(talking_points.__file__).exists()


def test_no_point_repeats_advice_gpunode_must_never_give() -> None:
    text = repr(
        [p.model_dump() for name in ("seed", "slab-leak") for p in diagnose(name).talking_points]
    )
    for bad in ("memory-pressure", "tcp_mem", "ClusterResourceQuota", "HighMemoryUtilization"):
        assert bad not in text


# --- a GPU training container at its own limit (the demo after tier 1 evicted preprocessing)


def _training_at_its_limit(*, available: float = 17.5, limits_pct: int = 57) -> Diagnosis:
    """A training container at its own limit on a node with headroom (7% of RAM available:
    not short, so the verdict is the container's limit, not a host-memory consumer)."""
    train = pod("train-0", gpu=8, req=68, lim=72, owner="StatefulSet")
    b = bundle(
        meminfo=meminfo(251, free=available, mem_available=available, buffers=0.2, cached=3),
        containers=[cgroup(train, 69, limit=72)],
    )
    v = view([train], allocated=[memory_row(40, limits_pct, alloc=150.5)])
    return analyze(b, v, now=AT)


def test_a_gpu_container_at_its_own_limit_gets_no_limit_cap_suggestion() -> None:
    d = _training_at_its_limit()
    assert d.verdict.cause == "container_limit"
    keys = [p.key for p in d.talking_points]
    assert "ai.suggest_memory_limit" not in keys
    assert "ai.container_at_own_limit" in keys
    assert not any(p.tier == 3 and p.available for p in d.plans)


def test_the_own_limit_advice_states_the_node_room_from_facts() -> None:
    d = _training_at_its_limit(available=17.5, limits_pct=57)
    point = next(p for p in d.talking_points if p.key == "ai.container_at_own_limit")
    headroom = 150.5 * GI - 57 * 150.5 / 100 * GI
    assert point.params["gpu"] == 1 and point.params["limits_known"] == 1
    assert point.params["limits_headroom_bytes"] == int(150.5 * GI) - int(57 * 150.5 / 100 * GI)
    assert point.params["available_bytes"] == int(17.5 * GI)
    assert point.params["room_bytes"] == min(int(17.5 * GI), int(headroom))
    keys = {f.key for f in point.facts}
    assert {
        "node.memory_limits_bytes",
        "node.memory_allocatable_bytes",
        "node.mem_available_bytes",
    } <= keys


def test_own_limit_advice_says_limits_exceed_allocatable_when_they_do() -> None:
    d = _training_at_its_limit(limits_pct=110)
    point = next(p for p in d.talking_points if p.key == "ai.container_at_own_limit")
    assert point.params["limits_headroom_bytes"] == 0
    assert int(point.params["limits_excess_bytes"] or 0) > 0 and point.params["room_bytes"] == 0


def test_the_training_point_blames_the_container_limit_not_the_node() -> None:
    d = _training_at_its_limit()
    point = next(p for p in d.talking_points if p.key == "ai.training_host_memory_cause")
    assert point.params["at_limit"] == 1


def test_no_limit_suggestion_and_no_tier3_point_when_the_node_is_not_at_risk() -> None:
    # limit-edge: a container at its own limit on a node with room. Before #20 tier 3 was
    # offered anyway, keeping the limit and capping CPU and threads (which frees no memory)
    d = diagnose("limit-edge")
    plan = next(p for p in d.plans if p.tier == 3)
    assert not plan.available and plan.warnings == ["node_not_at_risk"]
    assert "ai.suggest_memory_limit" not in _keys("limit-edge")
    assert not any(p.key.startswith("ops.tier") for p in d.talking_points)


def test_the_seed_limit_suggestion_says_it_is_below_the_working_set() -> None:
    point = next(p for p in diagnose("seed").talking_points if p.key == "ai.suggest_memory_limit")
    assert point.params["below_working_set"] == 1
    assert (
        point.params["proposed_limit"] == "38Gi"
    )  # 62 GiB less the 21.6 GiB shortage and 2.2 GiB headroom


def test_pods_the_api_does_not_know_get_no_talking_point() -> None:
    ghost = pod("ghost", req=1, lim=4)
    b = bundle(
        meminfo=meminfo(64, free=20, mem_available=30),
        containers=[cgroup(ghost, 3.9, limit=4, oom_kill_events=2)],
    )
    d = analyze(b, view([]), now=AT)
    assert d.verdict.cause == "container_limit"
    assert str(d.verdict.subject).startswith("pod-uid/")
    mentioned = [p.key for p in d.talking_points if "pod-uid/" in str(p.params)]
    assert mentioned == []
    assert not {"ai.container_near_limit", "ai.container_at_own_limit", "ai.oom_killed"} & {
        p.key for p in d.talking_points
    }


def test_a_small_page_cache_with_plenty_available_is_not_told_to_ops_as_pressure() -> None:
    b = bundle(meminfo=meminfo(251, free=64, mem_available=64, buffers=0.2, cached=3))
    d = analyze(b, view([]), now=AT)
    assert "PAGE_CACHE_SQUEEZED" not in {f.code for f in d.findings}
    assert "ops.page_cache_squeezed" not in {p.key for p in d.talking_points}
