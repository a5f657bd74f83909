"""Where tier 1's evicted pods land, before anything is evicted. Pure: no I/O.

An evicted pod's controller recreates it, and the scheduler must place it on another node
(this one is cordoned). For each evicted pod, in eviction order, over every other node's
free room (``ClusterView.room``), with the scheduler's filters (``bot.core.remedies.placement``:
cordon, taints vs tolerations, node selector, required node affinity, the node affinity of
its bound PersistentVolumes, free requests):

- it fits somewhere: nothing to say (the room it takes is kept from the pods after it);
- no node has room, but a node it matches belongs to a pool an autoscaler manages
  (``bot.core.remedies.autoscalers.pool_of``): the eviction makes the autoscaler add a node there
  (note ``evicted_scales_up``); when every node the pod matches is a GPU node while the pod
  asks for no GPU (pinned to the GPU pool by its selector, affinity or tolerations), the new
  node is a GPU node bought for a CPU pod (note ``evicted_buys_gpu_node``, warning of the
  same name);
- otherwise it stays Pending (note ``evicted_pending``: no node matches it at all, or none
  has room).

Required pod affinity and anti-affinity (``bot.core.remedies.affinity``, kube-scheduler's
InterPodAffinity filter) are checked against the pods the gateway read elsewhere
(``ClusterView.peers``: those the terms select, and every pod with a required
anti-affinity), less the pods being evicted, plus the evicted pods already placed earlier
in the plan. When every node that matches the pod is refused by those rules, it stays
Pending (``why`` "affinity"). Without ``peers`` (not read), only the common form is
modelled: a required anti-affinity per node against the pod's own labels (one replica per
node; ``sibling_nodes``, from the controller's replicas elsewhere). What an autoscaler's
pool could offer is read from the pool's own object when the gateway read it
(``ClusterView.pools``: Karpenter NodePools, ``bot.core.remedies.pools``), so a pool with no node
yet (scale from zero) is named too; a pool that matches but is at its ``limits`` leaves the pod
Pending (``why`` "pool_limit").
"""

from __future__ import annotations

from bot.core.model.actions import PlanNote
from bot.core.model.cluster import (
    ClusterView,
    NodePoolInfo,
    PodInfo,
    RoomOnNode,
    is_accelerator_resource,
)
from bot.core.model.workloads import PeerPod
from bot.core.remedies.affinity import Filter, placed
from bot.core.remedies.autoscalers import pool_of
from bot.core.remedies.placement import matches_node, short_of
from bot.core.remedies.pools import pool_takes

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


def affinity_filter(view: ClusterView, pod: PodInfo, peers: list[PeerPod]) -> Filter:
    """The inter-pod affinity rules for ``pod`` among ``peers``, read once; ``.refusal(
    room.labels)`` says why they keep it off a node (None: they do not); see
    ``bot.core.remedies.affinity``."""
    sched = pod.scheduling
    return Filter(
        namespace=pod.namespace,
        labels=pod.labels,
        affinity=sched.affinity_terms if sched is not None else [],
        anti_affinity=sched.anti_affinity_terms if sched is not None else [],
        peers=peers,
        labels_of={r.name: r.labels for r in view.room or []},
        namespace_labels=view.namespace_labels,
    )


def remaining_peers(view: ClusterView, leaving: list[PodInfo]) -> list[PeerPod] | None:
    """The existing pods the affinity rules count once ``leaving`` are gone (None: the
    gateway did not read them)."""
    if view.peers is None:
        return None
    gone = {p.key for p in leaving}
    return [p for p in view.peers if p.key not in gone]


def place(pod: PodInfo, node: str, peers: list[PeerPod] | None) -> None:
    """Count ``pod``, now placed on ``node``, among ``peers`` for the pods after it."""
    if peers is not None and pod.scheduling is not None:
        peers.append(
            placed(pod.key, pod.namespace, pod.labels, node, pod.scheduling.anti_affinity_terms)
        )


def scale_from_objects(
    view: ClusterView, pod: PodInfo, grown: dict[str, dict[str, int]]
) -> tuple[NodePoolInfo | None, bool]:
    """The pool (read from its object, ``view.pools``) whose new node would take ``pod``,
    a CPU pool before a GPU pool (a GPU pod needs a GPU pool); and whether a pool that
    matches it is at its limits. What a chosen pool adds is kept in ``grown``."""
    sched = pod.scheduling
    if sched is None or not view.pools:
        return None, False
    blocked = False
    for pool in sorted(view.pools, key=lambda p: (p.gpu, p.name)):
        if pod.accelerated and not pool.gpu:
            continue
        extra = grown.get(pool.name, {})
        used = {k: pool.used.get(k, 0) + extra.get(k, 0) for k in set(pool.used) | set(extra)}
        why = pool_takes(pool.model_copy(update={"used": used}), sched)
        if why == "limit":
            blocked = True
        if why is None:
            grown[pool.name] = {
                k: extra.get(k, 0) + sched.requests.get(k, 0)
                for k in set(extra) | set(sched.requests)
            }
            return pool, False
    return None, blocked


def landing_notes(view: ClusterView, evicted: list[PodInfo]) -> list[PlanNote]:
    """The notes for ``evicted`` (in eviction order); [] when the rooms were not read."""
    if view.room is None:
        return []
    rooms = {r.name: r for r in view.room if r.name != view.node.name}
    peers = remaining_peers(view, evicted)
    grown: dict[str, dict[str, int]] = {}  # what the plan's earlier pods add to each pool
    notes: list[PlanNote] = []
    for pod in evicted:
        sched = pod.scheduling
        if sched is None:
            continue
        if peers is None:
            taken = sibling_nodes(view, pod) if sched.spread_from_siblings else set()
            matching = [r for r in rooms.values() if matches_node(sched, r) and r.name not in taken]
            allowed = matching
        else:
            matching = [r for r in rooms.values() if matches_node(sched, r)]
            rules = affinity_filter(view, pod, peers)
            allowed = [r for r in matching if rules.refusal(r.labels) is None]
        fitting = [r for r in allowed if not short_of(sched.requests, r.free)]
        if fitting:
            best = max(fitting, key=lambda r: (r.free.get("memory", 0), r.name))
            rooms[best.name] = _take(best, sched.requests)
            place(pod, best.name, peers)
            continue
        pools = sorted({p for r in allowed if (p := pool_of(r.labels)) is not None})
        if pools:
            label, name, scaler = pools[0]
            gpu_pool = not pod.accelerated and all(is_gpu_room(r) for r in allowed)
            notes.append(
                PlanNote(
                    code="evicted_buys_gpu_node" if gpu_pool else "evicted_scales_up",
                    params={"pod": pod.key, "pool": name, "label": label, "scaler": scaler},
                )
            )
            continue
        chosen, blocked = scale_from_objects(view, pod, grown)
        if chosen is not None:
            gpu_pool = not pod.accelerated and chosen.gpu
            notes.append(
                PlanNote(
                    code="evicted_buys_gpu_node" if gpu_pool else "evicted_scales_up",
                    params={
                        "pod": pod.key,
                        "pool": chosen.name,
                        "label": chosen.label,
                        "scaler": chosen.scaler,
                    },
                )
            )
            continue
        why = "no_match" if not matching else "affinity" if not allowed else "no_room"
        if blocked:
            why = "pool_limit"
        notes.append(PlanNote(code="evicted_pending", params={"pod": pod.key, "why": why}))
    return notes
