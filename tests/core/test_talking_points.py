"""Talking points: each claim bound to facts; stances follow the evidence; gaps are unverified."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from test_analysis_scenarios import AT_NOW, BUNDLES, diagnose

from bot.core import talking_points
from bot.core.analysis import analyze
from bot.core.cluster import ClusterView
from bot.core.evidence import EvidenceBundle, Gap

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
