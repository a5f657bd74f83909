"""Responder edits of a tier-3 plan: validated, errors keyed by the modal's block ids."""

from __future__ import annotations

from datetime import timedelta

import pytest

from bot.core.model.actions import ActionPlan
from bot.core.remedies.editing import Tier3Bounds, Tier3Edits, apply_tier3_edits
from bot.core.reporting.analysis import analyze
from tests.services.fakes import load_scenario


@pytest.fixture(scope="module")
def plan() -> ActionPlan:
    bundle, view = load_scenario("seed")
    d = analyze(bundle, view, now=bundle.collected_at + timedelta(seconds=30))
    return next(p for p in d.plans if p.tier == 3)


def edits(**kw: object) -> Tier3Edits:
    base: dict[str, object] = {"memory_limit": "70Gi", "memory_request": "60Gi"}
    return Tier3Edits.model_validate(base | kw)


@pytest.mark.parametrize(
    ("change", "field", "words"),
    [
        ({"memory_limit": "lots"}, "memory_limit", "not a Kubernetes quantity"),
        ({"memory_limit": "0"}, "memory_limit", "greater than zero"),
        ({"memory_request": "80Gi"}, "memory_request", "may not exceed the limit"),
        ({"cpu_limit": "2", "cpu_request": "4"}, "cpu_request", "may not exceed the limit"),
        ({"cpu_limit": "fast"}, "cpu_limit", "not a CPU quantity"),
        ({"omp_num_threads": 0}, "omp_num_threads", "whole number from 1"),
        ({"omp_num_threads": 40000}, "omp_num_threads", "whole number from 1"),
        ({"memory_limit": "40Gi", "memory_request": "30Gi"}, "accept_oom", "OOM-kill"),
    ],
)
def test_bad_edits_are_refused_next_to_their_field(
    plan: ActionPlan, change: dict[str, object], field: str, words: str
) -> None:
    result = apply_tier3_edits(plan, edits(**change))
    assert isinstance(result, dict)
    assert words in result[field]


def test_good_edits_replace_the_patch_exactly(plan: ActionPlan) -> None:
    result = apply_tier3_edits(plan, edits(cpu_limit="6", cpu_request="4", omp_num_threads=6))
    assert isinstance(result, ActionPlan)
    [step] = [s for s in result.steps if s.verb == "patch_resources"]
    assert step.params["limits"] == {"memory": "70Gi", "cpu": "6"}
    assert step.params["requests"] == {"memory": "60Gi", "cpu": "4"}
    assert step.params.model_dump()["env"]["OMP_NUM_THREADS"] == "6"
    assert result.values is not None and result.values.memory_limit_bytes == 70 << 30
    assert "immediate_oom" not in result.warnings


def test_clearing_omp_threads_removes_the_variable(plan: ActionPlan) -> None:
    result = apply_tier3_edits(plan, edits(omp_num_threads=None))
    assert isinstance(result, ActionPlan)
    [step] = [s for s in result.steps if s.verb == "patch_resources"]
    assert "OMP_NUM_THREADS" not in step.params.model_dump()["env"]


def test_an_accepted_limit_below_the_working_set_is_flagged(plan: ActionPlan) -> None:
    result = apply_tier3_edits(
        plan, edits(memory_limit="40Gi", memory_request="30Gi", accept_oom=True)
    )
    assert isinstance(result, ActionPlan)
    assert result.values is not None and result.values.below_working_set
    assert "immediate_oom" in result.warnings


def test_plans_without_caps_cannot_be_edited(plan: ActionPlan) -> None:
    tier2 = plan.model_copy(update={"tier": 2, "values": None})
    assert isinstance(apply_tier3_edits(tier2, edits()), dict)


NODE_BOUNDS = Tier3Bounds(
    memory_bytes=503 << 30, memory_text="503Gi", cpu_millis=94_000, cpu_text="94"
)


@pytest.mark.parametrize(
    ("change", "field", "words"),
    [
        ({"memory_limit": "1e100"}, "memory_limit", "at most 503Gi, the node's allocatable memory"),
        ({"memory_limit": "504Gi"}, "memory_limit", "at most 503Gi"),
        ({"memory_request": "1e100"}, "memory_request", "at most 503Gi"),
        ({"cpu_limit": "1e100"}, "cpu_limit", "at most 94, the node's allocatable CPU"),
        ({"cpu_limit": "8", "cpu_request": "94001m"}, "cpu_request", "at most 94"),
        ({"memory_limit": "9" * 900_000}, "memory_limit", "too long"),
        ({"memory_limit": "1e99999999"}, "memory_limit", "not a Kubernetes quantity"),
    ],
)
def test_caps_above_the_node_allocatable_are_refused_naming_the_bound(
    plan: ActionPlan, change: dict[str, object], field: str, words: str
) -> None:
    result = apply_tier3_edits(plan, edits(**change), bounds=NODE_BOUNDS)
    assert isinstance(result, dict)
    assert words in result[field], result


@pytest.mark.parametrize("field", ["memory_limit", "cpu_limit"])
def test_without_known_bounds_a_cap_is_still_held_to_the_int64_quantity_limit(
    plan: ActionPlan, field: str
) -> None:
    result = apply_tier3_edits(plan, edits(**{field: "1e100"}))
    assert isinstance(result, dict)
    assert "the largest Kubernetes" in result[field]


def test_a_cap_at_the_node_allocatable_is_accepted(plan: ActionPlan) -> None:
    change = {"memory_limit": "503Gi", "memory_request": "60Gi", "cpu_limit": "94"}
    result = apply_tier3_edits(plan, edits(**change), bounds=NODE_BOUNDS)
    assert isinstance(result, ActionPlan)
