"""Plans follow the risk and the shortage: tier 2 only when the
training is at risk on the node, tier 3 sized to give the shortage back (floor at half),
DaemonSets capped with their blast radius, GPU processes of a gone pod are orphans."""

from __future__ import annotations

from typing import Any

import pytest

from bot.core.diagnosis.attribution import attribute
from bot.core.diagnosis.findings import Diagnosis, Finding, Ledger, LedgerEntry, Verdict
from bot.core.model.actions import Step
from bot.core.model.evidence import GpuProcess
from bot.core.model.workloads import WorkloadInfo
from bot.core.remedies.planning import plan_tier2, plan_tier3, training_at_risk
from bot.core.remedies.relief import with_relief
from bot.core.remedies.resizes import in_place_refusal
from bot.core.remedies.rollouts import rollout_notes
from tests.core.analysis_builders import AT, GI, bundle, pod, view


def _diagnosis(verdict: Verdict, *, findings: list[Finding] = (), **ledger: int) -> Diagnosis:  # type: ignore[assignment]
    entries = [
        LedgerEntry(category="pod", label=k, bytes=v, source="t", pod_key=k)
        for k, v in ledger.items()
    ]
    return Diagnosis.model_validate(
        {
            "node": "n1",
            "collected_at": AT,
            "ledger": Ledger(total_bytes=sum(ledger.values()), entries=entries),
            "verdict": verdict,
            "findings": list(findings),
        }
    )


def _finding(code: str, severity: str = "warning") -> Finding:
    return Finding.model_validate({"code": code, "severity": severity, "subject": "n1"})


@pytest.mark.parametrize(
    ("shortage", "codes", "at_risk"),
    [
        (0, [], False),
        (0, [("CONTAINER_OOM_KILLED", "warning")], False),
        (0, [("KERNEL_OOM_KILL", "warning")], False),  # a cgroup kill at its own limit
        (5 * GI, [], True),
        (0, [("NODE_MEMORY_PRESSURE", "warning")], True),
        (0, [("MEMORY_PRESSURE_STALL", "warning")], True),
        (0, [("POD_EVICTED_EVENTS", "warning")], True),
        (0, [("SYSTEM_OOM_EVENTS", "critical")], True),
        (0, [("KERNEL_OOM_KILL", "critical")], True),  # the global OOM killer ran
    ],
)
def test_tier2_is_offered_only_when_the_training_is_at_risk_on_the_node(
    shortage: int, codes: list[tuple[str, str]], at_risk: bool
) -> None:
    d = _diagnosis(
        Verdict(cause="healthy" if not shortage else "kernel_slab", shortage_bytes=shortage),
        findings=[_finding(c, s) for c, s in codes],
    )
    plan = plan_tier2(view([pod("train-0", gpu=8, owner="StatefulSet")]), d)

    assert training_at_risk(d) is at_risk
    assert plan.available is at_risk
    assert ("training_not_at_risk" in plan.warnings) is not at_risk


def test_tier2_never_raises_the_priority_of_a_pod_at_its_own_limit() -> None:
    consumer = pod("serve", gpu=1, owner="Deployment")
    d = _diagnosis(
        Verdict(cause="container_limit", subject="ml/serve", params={"pod": "ml/serve"}),
        findings=[_finding("NODE_MEMORY_PRESSURE")],
    )
    plan = plan_tier2(view([consumer]), d)
    assert not plan.available and "consumer_not_protected" in plan.warnings


def _offender(lim: float | None, ws: float, shortage: float, held: float) -> Diagnosis:
    params: dict[str, Any] = {
        "pod": "ml/prep",
        "container": "main",
        "working_set_bytes": int(ws * GI),
    }
    verdict = Verdict(
        cause="host_memory_workload",
        subject="ml/prep",
        params=params,
        shortage_bytes=int(shortage * GI),
    )
    ledger: dict[str, int] = {"ml/prep": int(held * GI)}
    return _diagnosis(verdict, findings=[], **ledger)


@pytest.mark.parametrize(
    ("lim", "ws", "shortage", "held", "limit", "warning", "relieves"),
    [
        # what it holds (the ledger line) less the shortage and 10% headroom, rounded down:
        # relief >= shortage (62 - 23.76 = 38.2; 222 - 23.2 = 198.8)
        (64, 62.5, 21.6, 62.0, "38Gi", "limit_cut_to_shortage", True),
        (None, 222.6, 21.1, 222.0, "198Gi", "limit_set_from_shortage", True),
        # the floor (half of what it holds) stops short: said so, and not the fix
        (64, 62.0, 40.0, 62.0, "31Gi", "cap_floor_limits_relief", False),
    ],
)
def test_tier3_gives_the_shortage_back_rounding_down_and_never_below_half(
    lim: float | None,
    ws: float,
    shortage: float,
    held: float,
    limit: str,
    warning: str,
    relieves: bool,
) -> None:
    d = _offender(lim, ws, shortage, held)
    plan = with_relief(plan_tier3(view([pod("prep", req=lim or 8, lim=lim)]), d), d)

    assert plan.values is not None and plan.values.memory_limit == limit
    assert warning in plan.warnings
    assert plan.relieves is relieves
    assert (plan.relief_bytes >= d.verdict.shortage_bytes) is relieves


def test_a_daemonset_is_capped_and_the_plan_counts_its_pods_on_every_node() -> None:
    shipper = pod("log-shipper-x1", req=0.5, lim=None, owner="DaemonSet")
    d = _offender(None, 120, 17, 120)
    d = d.model_copy(
        update={
            "verdict": d.verdict.model_copy(
                update={"params": {**d.verdict.params, "pod": "ml/log-shipper-x1"}}
            )
        }
    )
    ds = WorkloadInfo(
        kind="DaemonSet",
        namespace="ml",
        name="log-shipper-x1-ctl",
        replicas=40,
        strategy="RollingUpdate",
    )
    v = view([shipper], workloads=[ds])

    plan = plan_tier3(v, d)
    notes = rollout_notes(
        v, "DaemonSet", "ml", "log-shipper-x1-ctl", pods=[shipper], resources=True
    )

    assert plan.available and plan.target == "DaemonSet/ml/log-shipper-x1-ctl"
    assert plan.steps[0].verb == "patch_resources" and plan.steps[0].kind == "DaemonSet"
    note = next(n for n in plan.notes if n.code == "daemonset_rolls_every_node")
    assert note.params["count"] == 40 and note.params["here"] == 1
    assert note in notes


def test_tier2_never_patches_a_daemonset() -> None:
    agent = pod("gpu-agent", gpu=1, owner="DaemonSet")
    d = _diagnosis(Verdict(cause="kernel_slab", shortage_bytes=GI))
    plan = plan_tier2(view([agent]), d)
    assert not plan.available and "controller_kind_unsupported" in plan.warnings


def test_a_gpu_process_in_the_scope_of_a_pod_the_api_lacks_is_an_orphan() -> None:
    live = pod("train-0", gpu=1)
    procs = [
        GpuProcess(gpu_index=0, gpu_uuid="GPU-a", pid=10, pod_uid="uid-train-0"),
        GpuProcess(gpu_index=1, gpu_uuid="GPU-b", pid=11, pod_uid="uid-gone"),
    ]
    attr = attribute(bundle(gpu_processes=procs), view([live]))
    assert [g.pid for g in attr.gpu_processes_by_pod["uid-train-0"]] == [10]
    assert [g.pid for g in attr.unmapped_gpu_processes] == [11]
    # without a view nothing can be told apart: the cgroup's word stands
    assert attribute(bundle(gpu_processes=procs), None).unmapped_gpu_processes == []


@pytest.mark.parametrize(("below", "refusal"), [(True, "resize_below_usage"), (False, None)])
def test_setting_a_limit_where_none_was_is_a_decrease_for_an_in_place_resize(
    below: bool, refusal: str | None
) -> None:
    p = pod("prep", req=8, lim=None)
    v = view([p], in_place_resize=True, server_version="v1.35.0")
    step = Step(
        verb="patch_resources",
        kind="Deployment",
        namespace="ml",
        name="prep-ctl",
        params={"container": "main", "limits": {"memory": "8Gi"}},
    )
    assert in_place_refusal(v, p, step, below_usage=below) == refusal
