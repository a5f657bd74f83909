"""Pod rules: near limit, OOM kills, usage over request, BestEffort on GPU nodes, priority."""

from __future__ import annotations

import pytest

from bot.core.diagnosis.rules import pods
from bot.core.model.cluster import ContainerInfo
from bot.core.model.thresholds import DEFAULT
from tests.core.analysis_builders import bundle, cgroup, context, pod, view


@pytest.mark.parametrize(
    ("ws", "limit", "severity"),
    [
        (62, 64, "critical"),
        (15.6, 16, "critical"),
        (14, 16, "warning"),
        (10, 16, None),
        (10, None, None),
    ],
)
def test_container_near_limit(ws: float, limit: float | None, severity: str | None) -> None:
    p = pod("a", lim=limit)
    ctx = context(bundle(containers=[cgroup(p, ws, limit)]), view([p]))
    found = pods.container_near_limit(ctx, DEFAULT)
    assert [f.severity for f in found] == ([severity] if severity else [])


def test_container_limit_falls_back_to_the_api_when_the_cgroup_has_none() -> None:
    p = pod("a", lim=16)
    ctx = context(bundle(containers=[cgroup(p, 15.5, None)]), view([p]))
    assert [f.code for f in pods.container_near_limit(ctx, DEFAULT)] == ["CONTAINER_NEAR_LIMIT"]


@pytest.mark.parametrize(
    ("kills", "reason", "expected"),
    [(3, "OOMKilled", (3, 4)), (0, "OOMKilled", (0, 4)), (2, None, (2, 0)), (0, "Error", None)],
)
def test_oom_kills_from_cgroup_counters_and_termination_reason(
    kills: int, reason: str | None, expected: tuple[int, int] | None
) -> None:
    p = pod("a")
    p = p.model_copy(
        update={
            "containers": [
                p.containers[0].model_copy(
                    update={"last_termination_reason": reason, "restart_count": 4 if reason else 0}
                )
            ]
        }
    )
    ctx = context(bundle(containers=[cgroup(p, 1, 2, oom_kill_events=kills)]), view([p]))
    found = pods.container_oom_killed(ctx, DEFAULT)
    assert [(f.params["oom_kills"], f.params["restarts"]) for f in found] == (
        [expected] if expected else []
    )


@pytest.mark.parametrize(
    ("req", "ws", "fires"),
    [(1, 30, True), (48, 62, False), (0, 2, True), (0, 0.5, False), (4, 8, True)],
)
def test_usage_far_above_request(req: float, ws: float, fires: bool) -> None:
    p = pod("a", req=req, lim=None)
    ctx = context(bundle(containers=[cgroup(p, ws)]), view([p]))
    assert bool(pods.usage_above_request(ctx, DEFAULT)) is fires


@pytest.mark.parametrize(
    ("qos", "gpu_node", "fires"),
    [("besteffort", True, True), ("besteffort", False, False), ("burstable", True, False)],
)
def test_besteffort_on_gpu_node(qos: str, gpu_node: bool, fires: bool) -> None:
    p = pod("nb", qos=qos, req=0, lim=None)
    v = view([p])
    if not gpu_node:
        v = v.model_copy(
            update={"node": v.node.model_copy(update={"allocatable": {"memory": "100Gi"}})}
        )
    assert bool(pods.besteffort_on_gpu_node(context(bundle(), v), DEFAULT)) is fires


@pytest.mark.parametrize(
    ("gpu", "priority", "fires"),
    [(8, 0, True), (8, 1_000_000, False), (0, 0, False), (1, 1000, True)],
)
def test_gpu_pod_without_critical_priority(gpu: int, priority: int, fires: bool) -> None:
    p = pod("train", gpu=gpu, priority=priority)
    assert bool(pods.gpu_pod_no_priority(context(bundle(), view([p])), DEFAULT)) is fires


def test_container_info_is_matched_by_container_id() -> None:
    p = pod("a")
    p = p.model_copy(
        update={
            "containers": [
                ContainerInfo(
                    name="loader",
                    container_id=p.containers[0].container_id,
                    limits={"memory": "2Gi"},
                )
            ]
        }
    )
    ctx = context(bundle(containers=[cgroup(p, 1.95, 2)]), view([p]))
    assert pods.container_near_limit(ctx, DEFAULT)[0].params["container"] == "loader"
