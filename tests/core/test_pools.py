"""An evicted pod that fits on no node today may fit a pool that can launch one, read from the
pool's own object (a Karpenter NodePool, maybe with no node yet): tier 1 then says which
pool scales up, instead of "stays Pending"."""

from __future__ import annotations

from typing import Any

import pytest

from bot.core.model.cluster import NodePoolInfo, RoomOnNode, Taint
from bot.core.model.workloads import PodScheduling, Requirement, Toleration
from bot.core.remedies.planning import plan_tier1
from bot.core.remedies.pools import pool_takes
from tests.core.analysis_builders import pod, view

GI = 1024**3
ZONE = "topology.kubernetes.io/zone"
GPU_TAINT = Taint(key="nvidia.com/gpu", value="present", effect="NoSchedule")
CPU_POOL = NodePoolInfo(
    name="general",
    labels={"team": "data"},
    requirements=[
        Requirement(key="karpenter.sh/capacity-type", operator="In", values=["spot"]),
        Requirement(key=ZONE, operator="In", values=["us-east-1a", "us-east-1b"]),
    ],
    limits={"cpu": 100_000, "memory": 400 * GI},
    used={"cpu": 90_000, "memory": 300 * GI},
)
GPU_POOL = NodePoolInfo(name="h100", taints=[GPU_TAINT], gpu=True)


def _sched(**fields: Any) -> PodScheduling:
    return PodScheduling(**({"requests": {"cpu": 4000, "memory": 16 * GI, "pods": 1}} | fields))


def _in(key: str, *values: str) -> Requirement:
    return Requirement(key=key, operator="In", values=list(values))


@pytest.mark.parametrize(
    ("fields", "why"),
    [
        ({}, None),
        ({"node_selector": {"team": "data"}}, None),
        ({"node_selector": {"team": "ml"}}, "no_match"),
        ({"node_selector": {"disk": "nvme"}}, "no_match"),  # a label the pool never sets
        ({"node_selector": {ZONE: "us-east-1b"}}, None),
        ({"node_selector": {ZONE: "us-east-1c"}}, "no_match"),
        ({"required_terms": [[_in(ZONE, "us-east-1c")], [_in(ZONE, "us-east-1a")]]}, None),
        ({"required_terms": [[_in("node.kubernetes.io/instance-type", "m7i.4xlarge")]]}, None),
        ({"volume_terms": [[[_in("kubernetes.io/hostname", "gpu-node-01")]]]}, "no_match"),
        ({"requests": {"cpu": 20_000, "memory": GI}}, "limit"),
        ({"requests": {"cpu": 1000, "memory": 101 * GI}}, "limit"),
    ],
)
def test_a_new_node_of_the_pool_takes_the_pod_as_karpenter_would_decide(
    fields: dict[str, Any], why: str | None
) -> None:
    assert pool_takes(CPU_POOL, _sched(**fields)) == why


def test_a_tainted_pool_takes_only_pods_that_tolerate_it() -> None:
    assert pool_takes(GPU_POOL, _sched()) == "no_match"
    tolerate = [Toleration(key="nvidia.com/gpu", operator="Exists", effect="NoSchedule")]
    assert pool_takes(GPU_POOL, _sched(tolerations=tolerate)) is None


def _evicted(name: str, mem_gib: int, **fields: Any) -> Any:
    s = PodScheduling(requests={"cpu": 1000, "memory": mem_gib * GI, "pods": 1}, **fields)
    return pod(name).model_copy(update={"scheduling": s})


def _full_rooms() -> list[RoomOnNode]:
    free = {"cpu": 64_000, "memory": 0, "pods": 100}
    return [RoomOnNode(name="n1", free=free), RoomOnNode(name="cpu-1", free=free)]


def test_a_pool_with_no_node_yet_is_said_to_scale_up() -> None:
    plan = plan_tier1(view([_evicted("prep", 8)], room=_full_rooms(), pools=[CPU_POOL]))
    [note] = [n for n in plan.notes if n.code.startswith("evicted")]
    assert note.code == "evicted_scales_up"
    assert note.params == {
        "pod": "ml/prep",
        "pool": "general",
        "label": "karpenter.sh/nodepool",
        "scaler": "Karpenter",
    }
    # without the pools read, the same pod stays Pending
    plan = plan_tier1(view([_evicted("prep", 8)], room=_full_rooms()))
    [note] = [n for n in plan.notes if n.code.startswith("evicted")]
    assert (note.code, note.params["why"]) == ("evicted_pending", "no_room")


def test_a_cpu_pod_that_only_a_gpu_pool_takes_buys_a_gpu_node() -> None:
    tolerate = [Toleration(key="nvidia.com/gpu", operator="Exists", effect="NoSchedule")]
    prep = _evicted(
        "prep", 8, tolerations=tolerate, node_selector={"karpenter.sh/nodepool": "h100"}
    )
    plan = plan_tier1(view([prep], room=_full_rooms(), pools=[CPU_POOL, GPU_POOL]))
    [note] = [n for n in plan.notes if n.code.startswith("evicted")]
    assert (note.code, note.params["pool"]) == ("evicted_buys_gpu_node", "h100")
    assert "evicted_pod_buys_gpu_node" in plan.warnings


def test_the_plans_earlier_pods_use_up_a_pools_limit() -> None:
    # 100 GiB of memory left under the limit: the first 60 GiB pod fits, the second does not
    pods = [_evicted("a", 60), _evicted("b", 60)]
    plan = plan_tier1(view(pods, room=_full_rooms(), pools=[CPU_POOL]))
    notes = sorted(
        (n.code, n.params.get("why")) for n in plan.notes if n.code.startswith("evicted")
    )
    assert notes == [("evicted_pending", "pool_limit"), ("evicted_scales_up", None)]


def test_every_new_pool_note_is_worded_in_each_locale() -> None:
    from bot.render.sentences import sentence

    pods = [_evicted("a", 60), _evicted("b", 60)]
    plan = plan_tier1(view(pods, room=_full_rooms(), pools=[CPU_POOL]))
    for locale in ("en", "zh-CN"):
        for n in plan.notes:
            if n.code.startswith("evicted"):
                text = sentence("notes", n.code, n.params, fmt="text", locale=locale, strict=True)
                assert str(n.params["pod"]) in text
