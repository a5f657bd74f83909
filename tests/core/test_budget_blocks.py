"""Tier 1 honours PodDisruptionBudgets on any generated node: budgets are laid over the
generator's nodes (``generating.py``) at random (groups of the node's pods, any allowance,
unready pods, a pod two budgets select, a budget whose status is behind), and the
independent check (``gpunode_sandbox.advice_checks.check_budgets``) holds: no eviction in the
plan is one the eviction API would refuse, so no stated relief counts one, and every pod a
budget pins is named with its budget and counts."""

from __future__ import annotations

import random

import pytest

from bot.core.diagnosis.findings import Diagnosis
from bot.core.model.actions import ActionPlan, Step
from bot.core.model.cluster import BudgetInfo, ClusterView
from bot.core.model.workloads import LabelSelector
from bot.core.reporting.analysis import analyze
from gpunode_sandbox.advice_checks import check_budgets, relief_bound
from tests.core.generating import AT, CLASSES, Planted, plant

GROUP = "example.com/pdb-group"


def with_budgets(planted: Planted, rng: random.Random) -> ClusterView:
    """The planted node's view with 1-3 budgets over random groups of its pods."""
    view = planted.view
    pods = list(view.pods)
    budgets: list[BudgetInfo] = []
    for g in range(rng.randint(1, 3)):
        members = rng.sample(range(len(pods)), k=min(len(pods), rng.randint(1, 3)))
        for i in members:
            p = pods[i]
            ready = rng.random() > 0.15
            pods[i] = p.model_copy(update={"labels": {**p.labels, GROUP: f"g{g}"}, "ready": ready})
        by_ns: dict[str, int] = {}
        for i in members:
            by_ns[pods[i].namespace] = by_ns.get(pods[i].namespace, 0) + 1
        for ns in by_ns:
            selected = [p for p in pods if p.namespace == ns and p.labels.get(GROUP) == f"g{g}"]
            healthy = sum(1 for p in selected if p.ready)
            desired = rng.randint(0, len(selected))
            budgets.append(
                BudgetInfo(
                    namespace=ns,
                    name=f"budget-{g}",
                    selector=LabelSelector(match_labels={GROUP: f"g{g}"}),
                    disruptions_allowed=max(0, healthy - desired),
                    current_healthy=healthy,
                    desired_healthy=desired,
                    expected_pods=len(selected),
                    current=rng.random() > 0.1,
                    unhealthy_pod_eviction_policy=rng.choice([None, "AlwaysAllow"]),
                )
            )
    if budgets and rng.random() < 0.2:  # a second budget over the first one's pods
        first = budgets[0]
        budgets.append(first.model_copy(update={"name": "budget-twin"}))
    return view.model_copy(update={"pods": pods, "budgets": budgets})


def diagnosed(cls: str, seed: int) -> tuple[Planted, ClusterView, Diagnosis]:
    rng = random.Random(seed)
    planted = plant(cls, rng)
    view = with_budgets(planted, rng)
    return planted, view, analyze(planted.bundle, view, now=AT)


def tier1(d: Diagnosis) -> ActionPlan | None:
    return next((p for p in d.plans if p.tier == 1 and p.available), None)


@pytest.mark.parametrize("cls", CLASSES)
def test_tier1_never_counts_an_eviction_a_budget_refuses_and_names_every_pinned_pod(
    cls: str,
) -> None:
    pinned_seen = 0
    for seed in range(12):
        planted, view, d = diagnosed(cls, seed)
        assert check_budgets(view, d) == [], f"{cls} seed {seed}"
        plan = tier1(d)
        if plan is None:
            continue
        # the stated relief is at most what the plan's (unrefused) evictions free
        bound = relief_bound(plan, planted.bundle, view)
        assert plan.relief_bytes <= bound * 1.01 + 64 * 2**20, f"{cls} seed {seed}"
        pinned_seen += sum(1 for p in plan.protected if p.refusal is not None)
    assert pinned_seen or cls not in ("pod", "gpu_training"), "no pinned pod ever drawn"


def test_a_plan_that_evicts_a_pinned_pod_is_caught() -> None:
    """The check can fail: a tier 1 doctored to evict the pod a budget pins."""
    for seed in range(50):
        _, view, d = diagnosed("pod", seed)
        plan = tier1(d)
        pinned = [p for p in (plan.protected if plan else []) if p.reason == "pdb_blocked"]
        if plan is None or not pinned:
            continue
        ns, name = pinned[0].pod.split("/", 1)
        step = Step(verb="evict", kind="Pod", namespace=ns, name=name)
        bad = plan.model_copy(
            update={
                "steps": [*plan.steps, step],
                "blast_radius": [*plan.blast_radius, pinned[0].pod],
                "protected": [p for p in plan.protected if p.pod != pinned[0].pod],
            }
        )
        doctored = d.model_copy(update={"plans": [bad if p.tier == 1 else p for p in d.plans]})
        found = check_budgets(view, doctored)
        assert any(
            "refuses" in v.detail or "select" in v.detail or "processed" in v.detail for v in found
        )
        return
    pytest.fail("no generated node had a pinned pod to doctor")
