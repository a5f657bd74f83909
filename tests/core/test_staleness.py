"""stale_reason: the rules table, over the seed plans and a drifted re-read."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

import pytest

from bot.core.model.actions import ActionPlan
from bot.core.model.cluster import ClusterView
from bot.core.remedies.staleness import (
    STALE_REASONS,
    UNDO_CONFLICTS,
    controller_key,
    controller_steps,
    stale_reason,
    undo_conflict,
)
from bot.core.reporting.analysis import analyze
from tests.services.fakes import FakeKube, load_scenario

BUNDLE, VIEW = load_scenario("seed")
NOW = BUNDLE.collected_at + timedelta(seconds=30)
PLANS: dict[int, ActionPlan] = {p.tier: p for p in analyze(BUNDLE, VIEW, now=NOW).plans}
Controllers = dict[str, dict[str, Any] | None]


def _controllers(plan: ActionPlan) -> Controllers:
    kube = FakeKube(BUNDLE, VIEW)
    return {
        controller_key(s): kube.controllers.get(controller_key(s)) for s in controller_steps(plan)
    }


def _check(
    tier: int,
    *,
    current: ClusterView = VIEW,
    controllers: Controllers | None = None,
    now: datetime = NOW,
    before: ClusterView = VIEW,
) -> str | None:
    """The reason's English text (its code is checked to be a known one, with params that
    name what the text names)."""
    plan = PLANS[tier]
    why = stale_reason(
        plan,
        evidence_at=BUNDLE.collected_at,
        now=now,
        max_age_s=900,
        before=before,
        current=current,
        controllers=_controllers(plan) if controllers is None else controllers,
    )
    if why is None:
        return None
    assert why.reason in STALE_REASONS
    assert all(str(v) in why.text for k, v in why.params.items() if isinstance(v, str) and v)
    return why.text


def _cordoned(v: ClusterView) -> ClusterView:
    return v.model_copy(update={"node": v.node.model_copy(update={"unschedulable": True})})


def _without(pod: str) -> Callable[[ClusterView], ClusterView]:
    return lambda v: v.model_copy(update={"pods": [p for p in v.pods if p.key != pod]})


@pytest.mark.parametrize("tier", [1, 2, 3])
def test_an_unchanged_world_is_not_stale(tier: int) -> None:
    assert _check(tier) is None


@pytest.mark.parametrize("tier", [1, 2, 3])
def test_evidence_older_than_the_limit_is_stale(tier: int) -> None:
    reason = _check(tier, now=BUNDLE.collected_at + timedelta(minutes=16))
    assert reason is not None and "16 min old (limit 15 min)" in reason


@pytest.mark.parametrize(
    ("change", "words"),
    [
        (_cordoned, "was cordoned since the diagnosis"),
        (_without("ml/preprocess-7d9f8c6b5-x2k4q"), "is no longer on gpu-node-01"),
    ],
)
def test_tier1_drift_is_stale(change: Callable[[ClusterView], ClusterView], words: str) -> None:
    reason = _check(1, current=change(VIEW))
    assert reason is not None and words in reason


def test_a_node_already_cordoned_at_diagnosis_time_is_not_drift() -> None:
    assert _check(1, current=_cordoned(VIEW), before=_cordoned(VIEW)) is None


def test_pods_leaving_do_not_make_tier3_stale() -> None:
    assert _check(3, current=_without("ml/train-0")(VIEW)) is None


def _template(ctrls: Controllers, key: str) -> dict[str, Any]:
    obj = ctrls[key]
    assert obj is not None
    spec: dict[str, Any] = obj["spec"]["template"]["spec"]
    return spec


def test_a_gone_controller_is_stale() -> None:
    for tier in (2, 3):
        ctrls: Controllers = {k: None for k in _controllers(PLANS[tier])}
        reason = _check(tier, controllers=ctrls)
        assert reason is not None and "no longer exists" in reason


def test_changed_limits_are_stale_but_equal_quantities_in_other_units_are_not() -> None:
    ctrls = _controllers(PLANS[3])
    limits = _template(ctrls, "Deployment/ml/preprocess")["containers"][0]["resources"]["limits"]
    limits["memory"] = "65536Mi"  # == 64Gi
    assert _check(3, controllers=ctrls) is None
    limits["memory"] = "80Gi"
    reason = _check(3, controllers=ctrls)
    assert reason is not None and "limits now cpu=16, memory=80Gi" in reason


def test_a_gone_container_is_stale() -> None:
    ctrls = _controllers(PLANS[3])
    _template(ctrls, "Deployment/ml/preprocess")["containers"][0]["name"] = "renamed"
    reason = _check(3, controllers=ctrls)
    assert reason is not None and "container preprocess is gone" in reason


def test_a_changed_priority_class_is_stale() -> None:
    ctrls = _controllers(PLANS[2])
    _template(ctrls, "StatefulSet/ml/train")["priorityClassName"] = "other"
    reason = _check(2, controllers=ctrls)
    assert reason is not None and "now uses priority class other" in reason


_PATCHED = {
    "verb": "patch_resources",
    "kind": "Deployment",
    "namespace": "d",
    "name": "p",
    "before": {"container": "c"},
    "after": {"resources": {"limits": {"memory": "32Gi"}, "requests": {"memory": "28Gi"}}},
}
_PRIORITY = {
    "verb": "set_priority_class",
    "kind": "StatefulSet",
    "namespace": "t",
    "name": "s",
    "after": {"priorityClassName": "critical"},
}
_CORDON = {"verb": "cordon", "kind": "Node", "name": "n1", "after": {"unschedulable": True}}


def _deployment(limits: dict[str, str], requests: dict[str, str]) -> dict[str, object]:
    container = {"name": "c", "resources": {"limits": limits, "requests": requests}}
    return {"spec": {"template": {"spec": {"containers": [container]}}}}


@pytest.mark.parametrize(
    ("changes", "unschedulable", "controllers", "refused_because"),
    [
        # the objects still hold what the action left: undo may run
        (
            [_PATCHED],
            None,
            {"Deployment/d/p": _deployment({"memory": "32768Mi"}, {"memory": "28Gi"})},
            None,
        ),
        (
            [_PRIORITY],
            None,
            {
                "StatefulSet/t/s": {
                    "spec": {"template": {"spec": {"priorityClassName": "critical"}}}
                }
            },
            None,
        ),
        ([_CORDON], True, {}, None),
        # someone changed them since: undo would overwrite that, so it is refused
        (
            [_PATCHED],
            None,
            {"Deployment/d/p": _deployment({"memory": "40Gi"}, {"memory": "28Gi"})},
            "changed again",
        ),
        ([_PATCHED], None, {"Deployment/d/p": None}, "no longer exists"),
        (
            [_PRIORITY],
            None,
            {"StatefulSet/t/s": {"spec": {"template": {"spec": {}}}}},
            "changed again",
        ),
        ([_CORDON], False, {}, "uncordoned by someone else"),
        # a no-op or dry-run change left nothing to compare
        ([{**_CORDON, "noop": True}], False, {}, None),
    ],
)
def test_undo_is_refused_only_when_a_target_changed_after_the_action(
    changes: list[dict[str, object]],
    unschedulable: bool | None,
    controllers: dict[str, dict[str, object] | None],
    refused_because: str | None,
) -> None:
    why = undo_conflict(changes, node_unschedulable=unschedulable, controllers=controllers)
    if refused_because is None:
        assert why is None
    else:
        assert why is not None and refused_because in why.text
        assert why.reason in UNDO_CONFLICTS
        assert all(str(v) in why.text for v in why.params.values() if isinstance(v, str))
