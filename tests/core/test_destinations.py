"""Where tier 1's evicted pods land: a node with room, an autoscaler's scale-up (a GPU node
bought for a CPU pod pinned to the GPU pool), or Pending."""

from __future__ import annotations

from bot.core.model.cluster import RoomOnNode, Taint
from bot.core.model.workloads import PodScheduling, Toleration
from bot.core.remedies.planning import plan_tier1
from tests.core.analysis_builders import pod, view

GI = 1024**3
GPU_TAINT = Taint(key="nvidia.com/gpu", value="present", effect="NoSchedule")


def _cpu_pod(name: str, mem_gib: int, **sched: object) -> object:
    s = PodScheduling(requests={"cpu": 1000, "memory": mem_gib * GI, "pods": 1}, **sched)  # type: ignore[arg-type]
    return pod(name).model_copy(update={"scheduling": s})


def _room(name: str, free_gib: int, *, gpu: bool = False, **fields: object) -> RoomOnNode:
    free = {"cpu": 64_000, "memory": free_gib * GI, "pods": 100}
    if gpu:
        free["nvidia.com/gpu"] = 0
    return RoomOnNode(name=name, free=free, **fields)  # type: ignore[arg-type]


def _plan(pods: list[object], rooms: list[RoomOnNode]):  # type: ignore[no-untyped-def]
    v = view(pods, room=[_room("n1", 0, gpu=True), *rooms])  # type: ignore[arg-type]
    return plan_tier1(v)


def test_an_evicted_pod_that_fits_elsewhere_gets_no_note() -> None:
    plan = _plan([_cpu_pod("prep", 8)], [_room("cpu-1", 16)])
    assert [n.code for n in plan.notes if n.code.startswith("evicted")] == []


def test_room_taken_by_one_evicted_pod_is_not_offered_to_the_next() -> None:
    pods = [_cpu_pod("a", 10), _cpu_pod("b", 10)]
    plan = _plan(pods, [_room("cpu-1", 16)])
    pending = [n.params["pod"] for n in plan.notes if n.code == "evicted_pending"]
    assert len(pending) == 1 and pending[0] in ("ml/a", "ml/b")


def test_no_room_in_an_autoscaled_pool_means_a_scale_up() -> None:
    pool = {"karpenter.sh/nodepool": "cpu-spot"}
    plan = _plan([_cpu_pod("prep", 32)], [_room("cpu-1", 8, labels=pool)])
    [note] = [n for n in plan.notes if n.code.startswith("evicted")]
    assert note.code == "evicted_scales_up"
    assert note.params == {
        "pod": "ml/prep",
        "pool": "cpu-spot",
        "label": "karpenter.sh/nodepool",
        "scaler": "Karpenter",
    }


def test_a_cpu_pod_pinned_to_the_gpu_pool_buys_a_gpu_node() -> None:
    pool = {"eks.amazonaws.com/nodegroup": "p5-48xl"}
    tolerate = [Toleration(key="nvidia.com/gpu", operator="Exists", effect="NoSchedule")]
    prep = _cpu_pod("prep", 32, node_selector={"role": "gpu"}, tolerations=tolerate)
    gpu_room = _room("gpu-2", 8, gpu=True, labels=pool | {"role": "gpu"}, taints=[GPU_TAINT])
    plan = _plan([prep], [gpu_room, _room("cpu-1", 500)])
    [note] = [n for n in plan.notes if n.code.startswith("evicted")]
    assert note.code == "evicted_buys_gpu_node" and note.params["pool"] == "p5-48xl"
    assert "evicted_pod_buys_gpu_node" in plan.warnings


def test_a_pod_no_node_matches_stays_pending() -> None:
    prep = _cpu_pod("prep", 1, node_selector={"zone": "nowhere"})
    plan = _plan([prep], [_room("cpu-1", 500, labels={"zone": "a"})])
    [note] = [n for n in plan.notes if n.code.startswith("evicted")]
    assert note.code == "evicted_pending" and note.params["why"] == "no_match"


def test_a_tainted_node_without_toleration_is_no_landing_place() -> None:
    tainted = _room("gpu-2", 500, gpu=True, taints=[GPU_TAINT])
    plan = _plan([_cpu_pod("prep", 4)], [tainted])
    [note] = [n for n in plan.notes if n.code.startswith("evicted")]
    assert note.params["why"] == "no_match"


def test_without_the_rooms_read_nothing_is_claimed() -> None:
    plan = plan_tier1(view([_cpu_pod("prep", 4)]))  # type: ignore[list-item]
    assert not any(n.code.startswith("evicted") for n in plan.notes)


def test_every_landing_note_and_warning_is_worded_in_each_locale() -> None:
    from bot.render.sentences import sentence

    pool = {"karpenter.sh/nodepool": "gpu"}
    tolerate = [Toleration(key="nvidia.com/gpu", operator="Exists", effect="NoSchedule")]
    pods = [
        _cpu_pod("pinned", 32, tolerations=tolerate, node_selector={"role": "gpu"}),
        _cpu_pod("lost", 1, node_selector={"zone": "nowhere"}),
        _cpu_pod("big", 900),
    ]
    gpu_room = _room("gpu-2", 8, gpu=True, labels=pool | {"role": "gpu"}, taints=[GPU_TAINT])
    plan = _plan(pods, [gpu_room, _room("cpu-1", 64, labels={"karpenter.sh/nodepool": "c"})])
    codes = sorted(n.code for n in plan.notes if n.code.startswith("evicted"))
    assert codes == ["evicted_buys_gpu_node", "evicted_pending", "evicted_scales_up"]
    for locale in ("en", "zh-CN"):
        for n in plan.notes:
            text = sentence("notes", n.code, n.params, fmt="text", locale=locale, strict=True)
            assert str(n.params["pod"]) in text
        for w in plan.warnings:
            assert sentence("warnings", w, {}, fmt="text", locale=locale, strict=True)


def test_a_pod_on_a_local_volume_of_this_node_stays_pending_once_evicted() -> None:
    from bot.core.model.workloads import Requirement

    here = [[Requirement(key="kubernetes.io/hostname", operator="In", values=["n1"])]]
    prep = _cpu_pod("prep", 1, volume_terms=[here])
    other = _room("cpu-1", 500, labels={"kubernetes.io/hostname": "cpu-1"})
    plan = _plan([prep], [other])
    [note] = [n for n in plan.notes if n.code.startswith("evicted")]
    assert note.code == "evicted_pending" and note.params["why"] == "no_match"
    # the same pod with its volume on cpu-1 lands there
    there = [[Requirement(key="kubernetes.io/hostname", operator="In", values=["cpu-1"])]]
    plan = _plan([_cpu_pod("prep", 1, volume_terms=[there])], [other])
    assert not any(n.code.startswith("evicted") for n in plan.notes)


def test_a_pod_kept_apart_from_its_replicas_does_not_land_beside_one() -> None:
    from bot.core.model.workloads import WorkloadInfo

    prep = _cpu_pod("prep", 1, spread_from_siblings=True)
    owner = prep.owners[0]  # type: ignore[attr-defined]
    w = WorkloadInfo(
        kind=owner.kind, namespace="ml", name=owner.name, elsewhere={"ml/prep-b": "cpu-1"}
    )
    v = view([prep], room=[_room("n1", 0), _room("cpu-1", 500)], workloads=[w])  # type: ignore[list-item]
    [note] = [n for n in plan_tier1(v).notes if n.code.startswith("evicted")]
    assert note.code == "evicted_pending"
    # without the anti-affinity it lands beside its sibling
    free = prep.model_copy(  # type: ignore[attr-defined]
        update={"scheduling": prep.scheduling.model_copy(update={"spread_from_siblings": False})}  # type: ignore[attr-defined]
    )
    v = v.model_copy(update={"pods": [free]})
    assert not any(n.code.startswith("evicted") for n in plan_tier1(v).notes)
