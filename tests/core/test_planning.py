"""Tiered plans: who is evicted and who is protected, what restarts, computed caps, undo."""

from __future__ import annotations

import pytest

from bot.core.diagnosis.findings import Diagnosis, Ledger, Verdict
from bot.core.model.actions import Step
from bot.core.model.cluster import ClusterView, PodInfo, ResourceAllocation
from bot.core.model.plans import plan_id
from bot.core.remedies.planning import (
    plan_all,
    plan_tier1,
    plan_tier2,
    plan_tier3,
    protection_reason,
    undo_steps,
)
from tests.core.analysis_builders import pod, view
from tests.core.test_analysis_scenarios import diagnose

GI = 1024**3
SAFE = "cluster-autoscaler.kubernetes.io/safe-to-evict"
DND = "karpenter.sh/do-not-disrupt"


@pytest.mark.parametrize(
    ("changes", "reason"),
    [
        ({}, None),
        ({"is_mirror": True}, "mirror"),
        ({"is_daemonset": True}, "daemonset"),
        ({"labels": {"gpunode.io/role": "diagnostic"}}, "diagnostic"),
        ({"labels": {"gpunode.io/protected": "true"}}, "protected_label"),
        ({"priority": 1_000_000}, "critical_priority"),
        ({"priority_class_name": "system-cluster-critical"}, "critical_priority"),
        ({"gpu_request": 8}, "gpu_workload"),
        ({"owners": []}, "no_controller"),
        ({"annotations": {"karpenter.sh/do-not-disrupt": "true"}}, "do_not_disrupt"),
        ({"annotations": {"karpenter.sh/do-not-disrupt": "false"}}, None),
        ({"annotations": {SAFE: "false"}}, "safe_to_evict_false"),
        ({"annotations": {SAFE: "true"}}, None),
        # a value that is neither "true" nor a duration still protects (the safe side)
        ({"annotations": {"karpenter.sh/do-not-disrupt": "True"}}, "do_not_disrupt"),
    ],
)
def test_tier1_protection_rules(changes: dict[str, object], reason: str | None) -> None:
    assert protection_reason(pod("a").model_copy(update=changes)) == reason


def test_tier1_cordons_then_evicts_only_non_critical_pods() -> None:
    pods = [
        pod("prep"),
        pod("train", gpu=8),
        pod("bare", owner=None),
        pod("ds").model_copy(update={"is_daemonset": True}),
    ]
    plan = plan_tier1(view(pods))
    assert [(s.verb, s.name) for s in plan.steps] == [
        ("cordon", "n1"),
        ("annotate_node", "n1"),
        ("evict", "prep"),
    ]
    assert {(p.pod, p.reason) for p in plan.protected} == {
        ("ml/train", "gpu_workload"),
        ("ml/bare", "no_controller"),
        ("ml/ds", "daemonset"),
    }
    assert plan.blast_radius == ["ml/prep"]
    assert plan.reversible is False


def test_tier1_evicts_bare_pods_only_when_forced() -> None:
    plan = plan_tier1(view([pod("bare", owner=None)]), force_unmanaged=True)
    assert [s.name for s in plan.steps if s.verb == "evict"] == ["bare"]
    assert "unmanaged_pods_deleted_for_good" in plan.warnings


def test_tier1_honours_a_custom_protected_label_and_threshold() -> None:
    pods = [pod("a", labels={"team/keep": "true"}), pod("b", priority=500)]
    plan = plan_tier1(view(pods), protected_label="team/keep", critical_priority_threshold=100)
    assert [p.reason for p in plan.protected] == ["protected_label", "critical_priority"]


def test_plan_id_is_deterministic_and_depends_on_the_steps() -> None:
    v = view([pod("prep")])
    assert plan_tier1(v).plan_id == plan_tier1(v).plan_id
    assert len(plan_tier1(v).plan_id) == 12
    assert plan_tier1(v).plan_id != plan_tier1(view([pod("other")])).plan_id
    assert plan_id("n1", 1, []) != plan_id("n1", 2, [])


def test_tier2_names_what_restarts_and_warns_about_statefulsets() -> None:
    pods = [pod("train-0", gpu=4, owner="StatefulSet"), pod("prep")]
    pods[0] = pods[0].model_copy(
        update={"owners": [pods[0].owners[0].model_copy(update={"name": "train"})]}
    )
    pods.append(
        pod("train-1", gpu=4, owner="StatefulSet").model_copy(update={"owners": pods[0].owners})
    )
    plan = plan_tier2(view(pods))
    assert [s.verb for s in plan.steps] == ["ensure_priority_class", "set_priority_class"]
    assert plan.steps[0].params["value"] == 1_000_000
    assert plan.restarts == ["ml/train-0", "ml/train-1"]
    assert plan.target == "StatefulSet/ml/train"
    assert {"statefulset_restarts_one_by_one", "pod_priority_immutable_restarts"} <= set(
        plan.warnings
    )


def test_tier2_is_not_offered_for_a_guaranteed_gpu_pod_and_says_why() -> None:
    train = pod("train", gpu=8, req=64, lim=64, qos="guaranteed")
    plan = plan_tier2(view([train, pod("prep")]))
    assert not plan.available and plan.steps == [] and plan.restarts == []
    assert "guaranteed_within_requests" in plan.warnings
    # a Burstable GPU pod beside it is still protected; the Guaranteed one is not restarted
    burst = pod("eval", gpu=1, req=8, lim=16)
    plan = plan_tier2(view([train, burst, pod("prep")]))
    assert plan.available and plan.restarts == ["ml/eval"]


@pytest.mark.parametrize(
    ("owner", "warning"),
    [("Job", "job_template_immutable"), (None, "bare_pod_priority_immutable")],
)
def test_tier2_is_unavailable_for_jobs_and_bare_pods(owner: str | None, warning: str) -> None:
    plan = plan_tier2(view([pod("train", gpu=8, owner=owner)]))
    assert (plan.available, plan.warnings, plan.steps) == (False, [warning], [])


def test_tier2_without_gpu_pods_is_unavailable() -> None:
    assert plan_tier2(view([pod("prep")])).warnings == ["no_gpu_workloads"]


def test_tier3_for_the_seed_caps_the_preprocessing_deployment_from_the_evidence() -> None:
    d = diagnose("seed")
    plan = next(p for p in d.plans if p.tier == 3)
    assert plan.target == "Deployment/ml/preprocess"
    values = plan.values
    assert values is not None
    # preprocess holds 62 GiB (its ledger line) of a node short of 21.6 GiB; with 10% headroom
    # the cap frees 23.8 GiB: 62 - 23.8 = 38.2, rounded down to 38 GiB (above the floor, 31.25)
    assert (values.memory_limit, values.memory_request) == ("38Gi", "33Gi")
    assert "limit_cut_to_shortage" in plan.warnings
    assert plan.relieves and plan.relief_bytes >= d.verdict.shortage_bytes
    assert values.below_working_set is True and "immediate_oom" in plan.warnings
    # a memory incident: CPU and threads stay as they are (a CPU limit throttles, frees nothing)
    assert (values.cpu_limit, values.cpu_request, values.omp_num_threads) == (None, None, None)
    assert plan.restarts == ["ml/preprocess-7d9f8c6b5-x2k4q"]
    step = plan.steps[0]
    assert step.params.model_dump() == {
        "container": "preprocess",
        "requests": {"memory": "33Gi"},
        "limits": {"memory": "38Gi"},
        "env": {},
    }


@pytest.mark.parametrize("name", ["limit-edge", "healthy", "gpu-bound"])
def test_no_tier_is_offered_on_a_node_that_is_not_at_risk(name: str) -> None:
    # limit-edge: a container at its own limit on a node with room; healthy; GPU memory full
    # while host memory is fine. Before #20 tier 1 still offered to cordon and evict there.
    d = diagnose(name)
    assert d.verdict.shortage_bytes == 0
    assert not any(p.available for p in d.plans)
    assert [p.warnings for p in d.plans if p.tier != 2] == [["node_not_at_risk"]] * 2


def test_tier3_needs_an_offending_workload() -> None:
    plan = next(p for p in diagnose("slab-leak").plans if p.tier == 3)
    assert (plan.available, plan.warnings) == (False, ["no_offender"])


def test_tier3_refuses_a_job_offender() -> None:
    p = pod("etl", owner="Job")
    d = Diagnosis.model_validate(
        {
            "node": "n1",
            "collected_at": "2026-01-01T00:00:00Z",
            "ledger": Ledger(total_bytes=0),
            "verdict": Verdict(cause="container_limit", subject="ml/etl", params={"pod": "ml/etl"}),
        }
    )
    assert plan_tier3(view([p]), d).warnings == ["job_template_immutable"]


def test_plan_all_returns_three_tiers_in_order() -> None:
    d = diagnose("seed")
    assert [p.tier for p in plan_all(view([pod("a")]), d)] == [1, 2, 3]


@pytest.mark.parametrize(
    ("step", "before", "expected"),
    [
        (Step(verb="cordon", kind="Node", name="n1"), {"unschedulable": False}, [("uncordon", {})]),
        (Step(verb="cordon", kind="Node", name="n1"), {"unschedulable": True}, []),
        (Step(verb="evict", kind="Pod", namespace="ml", name="p"), {}, []),
        (
            Step(
                verb="set_priority_class",
                kind="Deployment",
                namespace="ml",
                name="d",
                params={"priority_class": "x"},
            ),
            {"priorityClassName": None, "resourceVersion": "7"},
            [("set_priority_class", {"priority_class": None})],
        ),
        (
            Step(
                verb="patch_resources",
                kind="Deployment",
                namespace="ml",
                name="d",
                params={
                    "container": "c",
                    "requests": {"memory": "28Gi", "cpu": "6"},
                    "limits": {"memory": "32Gi"},
                    "env": {"OMP_NUM_THREADS": "4"},
                },
            ),
            {
                "container": "c",
                "resources": {
                    "requests": {"memory": "48Gi"},
                    "limits": {"memory": "64Gi", "cpu": "16"},
                },
                "env": {"OMP_NUM_THREADS": None},
                "resourceVersion": "7",
            },
            [
                (
                    "patch_resources",
                    {
                        "container": "c",
                        "requests": {"cpu": None, "memory": "48Gi"},
                        "limits": {"cpu": "16", "memory": "64Gi"},
                        "env": {"OMP_NUM_THREADS": None},
                    },
                )
            ],
        ),
        (
            Step(
                verb="patch_resources",
                kind="Deployment",
                namespace="ml",
                name="d",
                params={"container": "c", "env": {"OMP_NUM_THREADS": "4", "MODE": "x"}},
            ),
            {
                "container": "c",
                "resources": {},
                "env": {
                    "OMP_NUM_THREADS": {"name": "OMP_NUM_THREADS", "value": "16"},
                    "MODE": {
                        "name": "MODE",
                        "valueFrom": {"configMapKeyRef": {"name": "m", "key": "k"}},
                    },
                },
            },
            [
                (
                    "patch_resources",
                    {
                        "container": "c",
                        "requests": {},
                        "limits": {},
                        "env": {
                            "MODE": {
                                "name": "MODE",
                                "valueFrom": {"configMapKeyRef": {"name": "m", "key": "k"}},
                            },
                            "OMP_NUM_THREADS": "16",
                        },
                    },
                )
            ],
        ),
    ],
)
def test_undo_steps_restore_the_captured_before_state(
    step: Step, before: dict[str, object], expected: list[tuple[str, dict[str, object]]]
) -> None:
    undo = undo_steps(step, before)
    assert [(s.verb, s.params.model_dump()) for s in undo] == expected
    assert all(
        (s.kind, s.namespace, s.name) == (step.kind, step.namespace, step.name) for s in undo
    )


def _limit_verdict(pod_key: str) -> Diagnosis:
    return Diagnosis.model_validate(
        {
            "node": "n1",
            "collected_at": "2026-01-01T00:00:00Z",
            "ledger": Ledger(total_bytes=0),
            "verdict": Verdict(
                cause="container_limit",
                subject=pod_key,
                params={"pod": pod_key, "container": "main", "working_set_bytes": 69 * GI},
            ),
        }
    )


def test_tier3_is_not_offered_for_a_gpu_container_at_its_own_limit() -> None:
    train = pod("train", gpu=8, req=68, lim=72, owner="StatefulSet")
    plan = plan_tier3(view([train]), _limit_verdict(train.key))
    assert (plan.available, plan.warnings, plan.steps) == (
        False,
        ["gpu_container_at_own_limit"],
        [],
    )
    assert plan.target == "StatefulSet/ml/train-ctl"


def _overcommitted(pods: list[PodInfo]) -> ClusterView:
    """A 100 GiB node whose limits total 144 GiB: the cut is 144 - 90 (target) = 54 GiB."""
    row = ResourceAllocation(
        resource="memory",
        requests="60Gi",
        limits="144Gi",
        requests_value=60 * GI,
        limits_value=144 * GI,
        allocatable_value=100 * GI,
    )
    return view(pods, allocated=[row])


def test_tier3_still_caps_a_non_gpu_container_at_its_own_limit_on_an_overcommitted_node() -> None:
    etl = pod("etl", req=60, lim=72)
    plan = plan_tier3(_overcommitted([etl]), _limit_verdict(etl.key))
    assert plan.available and plan.steps and "gpu_container_at_own_limit" not in plan.warnings


def test_tier3_is_not_offered_when_no_memory_limit_would_change() -> None:
    # before #20 it was offered anyway, to cap CPU and threads: that frees no memory
    etl = pod("etl", req=60, lim=72)
    plan = plan_tier3(view([etl]), _limit_verdict(etl.key))
    assert (plan.available, plan.warnings, plan.steps) == (False, ["memory_limit_unchanged"], [])


@pytest.mark.parametrize(
    ("current", "expected"), [("4", None), ("16", 8), ("0", None), ("x", None)]
)
def test_tier3_lowers_omp_num_threads_only_where_it_oversubscribes_the_cpu_request(
    current: str, expected: int | None
) -> None:
    etl = pod("etl", req=60, lim=72)
    main = etl.containers[0].model_copy(
        update={
            "requests": {**etl.containers[0].requests, "cpu": "8"},
            "env": {"OMP_NUM_THREADS": current},
        }
    )
    etl = etl.model_copy(update={"containers": [main]})
    plan = plan_tier3(_overcommitted([etl]), _limit_verdict(etl.key))
    assert plan.values is not None and plan.values.omp_num_threads == expected
    assert (plan.values.cpu_limit, plan.values.cpu_request) == (None, None)
    env = plan.steps[0].params.model_dump()["env"]
    assert env == ({"OMP_NUM_THREADS": str(expected)} if expected else {})
    assert set(plan.steps[0].params.model_dump()["limits"]) == {"memory"}


def test_a_do_not_disrupt_duration_protects_until_it_runs_out() -> None:
    from datetime import UTC, datetime, timedelta

    start = datetime(2026, 1, 1, tzinfo=UTC)
    p = pod("a", annotations={DND: "30m"}).model_copy(update={"created_at": start})
    assert protection_reason(p, now=start + timedelta(minutes=29)) == "do_not_disrupt"
    assert protection_reason(p, now=start + timedelta(minutes=30)) is None
    assert protection_reason(p) == "do_not_disrupt"  # no clock: the safe side


def test_tier1_leaves_pods_annotated_for_the_autoscalers_and_names_the_annotation() -> None:
    pods = [pod("keep", annotations={DND: "true"}), pod("ca", annotations={SAFE: "false"})]
    pods.append(pod("prep"))
    plan = plan_tier1(view(pods))
    assert [s.name for s in plan.steps if s.verb == "evict"] == ["prep"]
    assert {(p.pod, p.reason) for p in plan.protected} == {
        ("ml/keep", "do_not_disrupt"),
        ("ml/ca", "safe_to_evict_false"),
    }


def test_tier1_marks_the_node_against_scale_down_and_undo_removes_only_what_it_added() -> None:
    v = view([pod("prep")])
    ca = "cluster-autoscaler.kubernetes.io/scale-down-disabled"
    # the ops team already set Karpenter's: tier 1 adds only the cluster autoscaler's
    node = v.node.model_copy(update={"annotations": {DND: "true"}})
    plan = plan_tier1(v.model_copy(update={"node": node}))
    step = next(s for s in plan.steps if s.verb == "annotate_node")
    assert step.params.model_dump() == {"annotations": {ca: "true"}}
    undo = undo_steps(step, {"annotations": {ca: None}})
    assert [u.params.model_dump() for u in undo] == [{"annotations": {ca: None}}]
    # a node that has both: nothing to add, nothing to undo
    both = v.node.model_copy(update={"annotations": {DND: "true", ca: "true"}})
    plan = plan_tier1(v.model_copy(update={"node": both}))
    assert not any(s.verb == "annotate_node" for s in plan.steps)
