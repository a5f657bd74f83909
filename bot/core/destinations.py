"""Where tier 1's evicted pods land, before anything is evicted. Pure: no I/O.

An evicted pod's controller recreates it, and the scheduler must place it on another node
(this one is cordoned). For each evicted pod, in eviction order, over every other node's
free room (``ClusterView.room``), with the scheduler's filters (``bot.core.placement``:
cordon, taints vs tolerations, node selector, required node affinity, the node affinity of
its bound PersistentVolumes, free requests):

- it fits somewhere: nothing to say (the room it takes is kept from the pods after it);
- no node has room, but a node it matches belongs to a pool an autoscaler manages
  (``bot.core.autoscalers.pool_of``): the eviction makes the autoscaler add a node there
  (note ``evicted_scales_up``); when every node the pod matches is a GPU node while the pod
  asks for no GPU (pinned to the GPU pool by its selector, affinity or tolerations), the new
  node is a GPU node bought for a CPU pod (note ``evicted_buys_gpu_node``, warning of the
  same name);
- otherwise it stays Pending (note ``evicted_pending``: no node matches it at all, or none
  has room).

Pod anti-affinity is modelled for its common form, a required anti-affinity per node against
the pod's own labels (one replica per node): nodes where a sibling replica runs are out
(``sibling_nodes``, from the controller's replicas elsewhere). Other pod (anti)affinity is
not (the view does not carry other nodes' pod labels), nor what an autoscaler's pool could
offer beyond the nodes it has now.
"""

from __future__ import annotations

from bot.core.actions import PlanNote
from bot.core.autoscalers import pool_of
from bot.core.cluster import ClusterView, PodInfo, RoomOnNode, is_accelerator_resource
from bot.core.placement import matches_node, short_of

GPU_PRESENT_LABEL = "nvidia.com/gpu.present"


def is_gpu_room(room: RoomOnNode) -> bool:
    """A GPU node, from what the room shows: an accelerator resource in its allocatable
    (``free`` keeps every allocatable key) or GPU feature discovery's label."""
    return any(is_accelerator_resource(k) for k in room.free) or (
        room.labels.get(GPU_PRESENT_LABEL) == "true"
    )


def sibling_nodes(view: ClusterView, pod: PodInfo) -> set[str]:
    """The nodes where the pod's top controller runs other replicas (``elsewhere``)."""
    owner = pod.top_owner
    if owner is None:
        return set()
    for w in view.workloads:
        if (w.kind, w.namespace, w.name) == (owner.kind, pod.namespace, owner.name):
            return {node for key, node in w.elsewhere.items() if key != pod.key}
    return set()


def _take(room: RoomOnNode, requests: dict[str, int]) -> RoomOnNode:
    free = dict(room.free)
    for k, v in requests.items():
        free[k] = free.get(k, 0) - v
    return room.model_copy(update={"free": free})


def landing_notes(view: ClusterView, evicted: list[PodInfo]) -> list[PlanNote]:
    """The notes for ``evicted`` (in eviction order); [] when the rooms were not read."""
    if view.room is None:
        return []
    rooms = {r.name: r for r in view.room if r.name != view.node.name}
    notes: list[PlanNote] = []
    for pod in evicted:
        sched = pod.scheduling
        if sched is None:
            continue
        taken = sibling_nodes(view, pod) if sched.spread_from_siblings else set()
        matching = [r for r in rooms.values() if matches_node(sched, r) and r.name not in taken]
        fitting = [r for r in matching if not short_of(sched.requests, r.free)]
        if fitting:
            best = max(fitting, key=lambda r: (r.free.get("memory", 0), r.name))
            rooms[best.name] = _take(best, sched.requests)
            continue
        pools = sorted({p for r in matching if (p := pool_of(r.labels)) is not None})
        if pools:
            label, name, scaler = pools[0]
            gpu_pool = not pod.accelerated and all(is_gpu_room(r) for r in matching)
            notes.append(
                PlanNote(
                    code="evicted_buys_gpu_node" if gpu_pool else "evicted_scales_up",
                    params={"pod": pod.key, "pool": name, "label": label, "scaler": scaler},
                )
            )
            continue
        notes.append(
            PlanNote(
                code="evicted_pending",
                params={"pod": pod.key, "why": "no_room" if matching else "no_match"},
            )
        )
    return notes
