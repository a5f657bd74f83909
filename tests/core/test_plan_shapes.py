"""Plans whose numbers add up on every shape: caps per container and
per pod, a node-wide cut shared across an owner's replicas, relief bounded by what the capped
container holds, requests never above the limit, no CPU caps, the fewest evictions in the
kubelet's order, and the replicas a template change rolls on other nodes.

Each test names the old behaviour it fails on."""

from __future__ import annotations

from typing import Any

from bot.core.diagnosis.findings import Diagnosis, Finding, Ledger, LedgerEntry, Verdict
from bot.core.model.cluster import ClusterView, ContainerInfo, PodInfo, ResourceAllocation
from bot.core.model.quantity import quantity_value
from bot.core.model.workloads import WorkloadInfo
from bot.core.remedies.caps import level
from bot.core.remedies.planning import eviction_order, plan_all, plan_tier1, plan_tier3
from bot.core.remedies.relief import with_relief
from tests.core.analysis_builders import AT, GI, pod, view

MI = 1024**2


def _diagnosis(
    verdict: Verdict,
    ledger: dict[str, float],
    findings: list[Finding] = (),  # type: ignore[assignment]
) -> Diagnosis:
    entries = [
        LedgerEntry(category="pod", label=k, bytes=int(v * GI), source="t", pod_key=k)
        for k, v in ledger.items()
    ]
    return Diagnosis.model_validate(
        {
            "node": "n1",
            "collected_at": AT,
            "ledger": Ledger(total_bytes=int(sum(ledger.values()) * GI), entries=entries),
            "verdict": verdict,
            "findings": list(findings),
        }
    )


def _replicas(n: int, *, req: float, lim: float | None, owner: str = "api") -> list[PodInfo]:
    out = []
    for i in range(n):
        p = pod(f"{owner}-{i:02d}", req=req, lim=lim)
        out.append(
            p.model_copy(update={"owners": [p.owners[0].model_copy(update={"name": owner})]})
        )
    return out


def _node(pods: list[PodInfo], *, allocatable: float, limits: float, **fields: Any) -> ClusterView:
    row = ResourceAllocation(
        resource="memory",
        requests="0",
        limits=f"{limits}Gi",
        requests_value=0,
        limits_value=limits * GI,
        allocatable_value=allocatable * GI,
    )
    return view(pods, allocated=[row], **fields)


def _host_verdict(first: str, *, shortage: float, ws: float, group_pods: int) -> Verdict:
    params: dict[str, Any] = {
        "pod": first,
        "container": "main",
        "working_set_bytes": int(ws * GI),
        "container_working_set_bytes": int(ws * GI),
        "pods_in_group": group_pods,
    }
    return Verdict(
        cause="host_memory_workload",
        subject=first,
        params=params,
        shortage_bytes=int(shortage * GI),
    )


def _bytes(text: str) -> int:
    value = quantity_value(text)
    assert value is not None
    return int(value)


def test_a_shortage_is_shared_across_the_owners_replicas_and_no_cap_falls_below_half() -> None:
    # 14 replicas hold 16 GiB each (limit 20 GiB) on a 256 GiB node short of 20 GiB, with
    # limits 280 GiB (the old node-wide cut, 280 - 230 = 50 GiB, came off ONE container's
    # 20 GiB limit: "memory limit 1Mi, request 1Mi")
    pods = _replicas(14, req=8, lim=20)
    d = _diagnosis(
        _host_verdict(pods[0].key, shortage=20, ws=16, group_pods=14), {p.key: 16 for p in pods}
    )
    v = _node(pods, allocatable=256, limits=280)
    plan = with_relief(plan_tier3(v, d), d, v)

    assert plan.values is not None
    limit = plan.values.memory_limit_bytes
    # each pod gives (20 + 2 headroom)/14 = 1.57 GiB: 16 - 1.57 = 14.43, rounded down to a
    # quarter GiB: 14.25 GiB
    assert plan.values.memory_limit == "14592Mi"
    assert limit >= 8 * GI  # never below half of what the container holds per pod
    assert _bytes(plan.values.memory_request) <= limit
    assert plan.relief_bytes == int(14 * 1.75 * GI) and plan.relieves
    assert len(plan.restarts) == 14


def test_a_node_wide_overcommit_cut_is_shared_across_the_replicas_not_taken_from_one() -> None:
    # not short, under pressure: limits 280 GiB against a 230 GiB target (0.9 x 256); the 50 GiB
    # cut is shared by 12 replicas (4.2 GiB each). Old code: 20 - 50 < 0 -> 1Mi
    pods = _replicas(12, req=8, lim=20)
    pressure = Finding.model_validate(
        {"code": "NODE_MEMORY_PRESSURE", "severity": "warning", "subject": "n1"}
    )
    d = _diagnosis(
        _host_verdict(pods[0].key, shortage=0, ws=12, group_pods=12),
        {p.key: 12 for p in pods},
        [pressure],
    )
    plan = plan_tier3(_node(pods, allocatable=256, limits=280), d)

    assert plan.values is not None
    assert plan.values.memory_limit == "16128Mi"  # 20 - 50/12 GiB = 15.83 -> 15.75 GiB
    assert plan.values.memory_limit_bytes >= 6 * GI


def test_the_floor_holds_when_the_shared_cut_would_go_below_half() -> None:
    pods = _replicas(2, req=4, lim=20)
    d = _diagnosis(
        _host_verdict(pods[0].key, shortage=0, ws=18, group_pods=2),
        {p.key: 18 for p in pods},
        [
            Finding.model_validate(
                {"code": "MEMORY_PRESSURE_STALL", "severity": "warning", "subject": "n1"}
            )
        ],
    )
    plan = plan_tier3(_node(pods, allocatable=100, limits=200), d)

    assert plan.values is not None and plan.values.memory_limit == "9Gi"
    assert "limits_remain_overcommitted" in plan.warnings


def test_water_filling_finds_the_highest_limit_that_frees_the_shortage() -> None:
    assert level([10 * GI, 10 * GI], 4 * GI) == 8 * GI
    assert level([30 * GI, 10 * GI], 4 * GI) == 26 * GI  # only the big one gives
    assert level([30 * GI, 10 * GI], 24 * GI) == 8 * GI  # both give: (40 - 24) / 2
    assert level([GI], 2 * GI) == 0


def test_a_leaking_sidecar_is_capped_and_its_relief_is_what_the_sidecar_holds() -> None:
    # a training pod: the trainer holds 290 GiB, its native sidecar (log shipper) 9 GiB and
    # leaking. Old code counted the pod's ledger line: "frees about 297 GiB"
    train = pod("train-0", req=300, lim=None, gpu=8, owner="StatefulSet")
    shipper = ContainerInfo(name="shipper", init=True, sidecar=True, requests={"memory": "256Mi"})
    train = train.model_copy(update={"containers": [*train.containers, shipper]})
    params: dict[str, Any] = {
        "pod": train.key,
        "container": "shipper",
        "working_set_bytes": 299 * GI,
        "container_working_set_bytes": 9 * GI,
    }
    verdict = Verdict(
        cause="host_memory_workload", subject=train.key, params=params, shortage_bytes=4 * GI
    )
    d = _diagnosis(verdict, {train.key: 299})
    holdings = {train.key: {"main": 290 * GI, "shipper": 9 * GI}}
    v = view([train])
    plan = with_relief(plan_tier3(v, d, holdings=holdings), d, v, holdings)

    assert plan.values is not None and plan.values.container == "shipper"
    assert plan.steps[0].params.model_dump()["container"] == "shipper"
    # 9 - (4 + 1 headroom) = 4 GiB is under half of 9: the floor, 4.5 GiB, decides
    assert plan.values.memory_limit == "4608Mi" and "cap_floor_limits_relief" in plan.warnings
    assert plan.relief_bytes == int(4.5 * GI) and plan.relieves
    # its request (256Mi) is not raised to 87.5% of the new limit
    assert plan.values.memory_request == "256Mi"


def test_without_holdings_a_sidecars_relief_is_still_bounded_by_its_working_set() -> None:
    train = pod("train-0", req=300, lim=None, gpu=8, owner="StatefulSet")
    params: dict[str, Any] = {
        "pod": train.key,
        "container": "main",
        "working_set_bytes": 299 * GI,
        "container_working_set_bytes": 9 * GI,
    }
    verdict = Verdict(
        cause="host_memory_workload", subject=train.key, params=params, shortage_bytes=4 * GI
    )
    d = _diagnosis(verdict, {train.key: 299})
    v = view([train])
    plan = with_relief(plan_tier3(v, d), d, v)
    assert plan.relief_bytes <= 9 * GI


def test_a_proposed_request_never_exceeds_the_limit_nor_todays_request() -> None:
    pods = _replicas(3, req=2, lim=6)
    d = _diagnosis(
        _host_verdict(pods[0].key, shortage=3, ws=4.75, group_pods=3), {p.key: 4.75 for p in pods}
    )
    plan = plan_tier3(_node(pods, allocatable=238, limits=288), d)
    assert plan.values is not None
    assert plan.values.memory_limit == "3328Mi"  # 4.75 - (3 + 1)/3 = 3.42 -> 3.25 GiB
    assert plan.values.memory_request == "2Gi"  # 87.5% of 3 GiB would raise today's 2 GiB


def test_an_unbounded_leak_does_not_get_a_request_that_reserves_the_leak() -> None:
    # no limit, no request: old code asked 87.5% of the new limit, near the leak's holding
    pods = _replicas(1, req=0, lim=None)
    d = _diagnosis(_host_verdict(pods[0].key, shortage=10, ws=40, group_pods=1), {pods[0].key: 40})
    plan = plan_tier3(_node(pods, allocatable=100, limits=0), d)
    assert plan.values is not None and plan.values.memory_limit == "29Gi"  # 40 - (10 + 1)
    assert _bytes(plan.values.memory_request) <= plan.values.memory_limit_bytes
    assert _bytes(plan.values.memory_request) < 40 * GI


def test_a_cap_names_the_replicas_it_rolls_on_other_nodes() -> None:
    pods = _replicas(2, req=2, lim=6)
    elsewhere = {f"ml/api-{i:02d}": "n2" for i in range(2, 5)}
    api = WorkloadInfo(
        kind="Deployment",
        namespace="ml",
        name="api",
        replicas=5,
        strategy="RollingUpdate",
        max_surge="0",
        elsewhere=elsewhere,
    )
    d = _diagnosis(
        _host_verdict(pods[0].key, shortage=2, ws=5, group_pods=2), {p.key: 5 for p in pods}
    )
    v = _node(pods, allocatable=238, limits=288, workloads=[api])
    plan = with_relief(plan_tier3(v, d), d, v)

    assert plan.restarts == [p.key for p in pods]
    assert set(plan.blast_radius) == {p.key for p in pods} | set(elsewhere)
    note = next(n for n in plan.notes if n.code == "rolls_other_nodes")
    assert (note.params["count"], note.params["here"], note.params["elsewhere"]) == (5, 2, 3)
    assert "ml/api-04 on n2" in str(note.params["pods"])
    # the 2 GiB shortage + 1 GiB headroom is shared by the 2 pods here (5 - 1.5 = 3.5 GiB);
    # the 3 elsewhere free nothing on this node
    assert plan.values is not None and plan.values.memory_limit == "3584Mi"
    assert plan.relief_bytes == 3 * GI


def test_tier1_evicts_the_fewest_pods_in_the_kubelets_order_and_names_the_rest() -> None:
    # the offender alone covers the 4 GiB shortage 15 times over: old code evicted all four
    offender = pod("prep", req=8, lim=None)
    others = [pod("web", req=2, lim=4), pod("batch", req=1, lim=2), pod("docs", req=4, lim=8)]
    d = _diagnosis(
        Verdict(cause="host_memory_workload", subject="ml/prep", shortage_bytes=4 * GI),
        {"ml/prep": 60, "ml/web": 3, "ml/batch": 1.5, "ml/docs": 2},
    )
    plan = plan_tier1(view([offender, *others]), d)

    assert plan.blast_radius == ["ml/prep"]
    assert [s.verb for s in plan.steps] == ["cordon", "annotate_node", "evict"]
    assert {(p.pod, p.reason) for p in plan.protected} == {
        ("ml/web", "not_needed"),
        ("ml/batch", "not_needed"),
        ("ml/docs", "not_needed"),
    }


def test_the_kubelets_eviction_order_is_above_request_then_priority_then_usage() -> None:
    usage = {"ml/a": 3 * GI, "ml/b": 10 * GI, "ml/c": 5 * GI, "ml/d": 30 * GI}
    a = pod("a", req=1)  # 2 GiB above its request, priority 0
    b = pod("b", req=2, priority=100)  # 8 GiB above, but a higher priority
    c = pod("c", req=1)  # 4 GiB above, priority 0
    d = pod("d", req=40)  # within its request: last, whatever it holds
    assert [p.name for p in eviction_order([a, b, c, d], usage)] == ["c", "a", "b", "d"]


def test_tier1_takes_more_pods_until_the_shortage_and_headroom_are_covered() -> None:
    pods = [pod(f"w{i}", req=1, lim=None) for i in range(4)]
    d = _diagnosis(
        Verdict(cause="overcommit", shortage_bytes=5 * GI),
        {"ml/w0": 3, "ml/w1": 2.5, "ml/w2": 2, "ml/w3": 1.5},
    )
    plan = plan_tier1(view(pods), d)
    # 5 GiB + 1 GiB headroom: w0 (3) + w1 (2.5) + w2 (2) = 7.5 >= 6; w3 is left alone
    assert plan.blast_radius == ["ml/w0", "ml/w1", "ml/w2"]
    assert [(p.pod, p.reason) for p in plan.protected] == [("ml/w3", "not_needed")]


def test_tier1_never_evicts_mig_dra_or_gang_pods() -> None:
    mig = pod("mig", req=1, lim=None).model_copy(
        update={"accelerators": {"nvidia.com/mig-1g.10gb": 1}}
    )
    dra = pod("dra", req=1, lim=None).model_copy(update={"resource_claims": ["gpu"]})
    gang = pod("gang", req=1, lim=None, labels={"training.kubeflow.org/job-name": "llm"})
    d = _diagnosis(
        Verdict(cause="overcommit", shortage_bytes=50 * GI),
        {"ml/mig": 20, "ml/dra": 20, "ml/gang": 20},
    )
    plan = plan_tier1(view([mig, dra, gang]), d)
    assert plan.blast_radius == []
    assert {p.reason for p in plan.protected} <= {"gpu_workload", "gang_member"}


def test_no_plan_proposes_a_cpu_limit_for_a_memory_incident() -> None:
    p = pod("prep", req=8, lim=64)
    main = p.containers[0].model_copy(
        update={
            "requests": {"memory": "8Gi", "cpu": "8"},
            "limits": {"memory": "64Gi", "cpu": "16"},
        }
    )
    p = p.model_copy(update={"containers": [main]})
    d = _diagnosis(_host_verdict(p.key, shortage=10, ws=60, group_pods=1), {p.key: 60})
    plans = plan_all(_node([p], allocatable=100, limits=64), d)
    tier3 = plans[2]
    assert tier3.values is not None and tier3.available
    step = tier3.steps[0].params.model_dump()
    assert "cpu" not in step["limits"] and "cpu" not in step["requests"]
    assert step["env"] == {}
