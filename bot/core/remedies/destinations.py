"""Where tier 1's evicted pods land, before anything is evicted. Pure: no I/O.

An evicted pod's controller recreates it, and the scheduler must place it on another node
(this one is cordoned). For each evicted pod, in eviction order, over every other node's
free room (``ClusterView.room``), with the scheduler's filters (``bot.core.remedies.placement``:
cordon, taints vs tolerations, node selector, required node affinity, the node affinity of
its bound PersistentVolumes, free requests):

- it fits somewhere: nothing to say (the room it takes is kept from the pods after it);
- no node has room, but a node it matches belongs to a pool an autoscaler manages
  (``bot.core.remedies.autoscalers.pool_of``), and the rules that count other pods would let
  it onto a new node of that pool (a new hostname: a rule by hostname does not refuse it,
  one by zone refuses it as it refuses the pool's nodes in that zone): the eviction makes
  the autoscaler add a node there
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
Pending (``why`` "affinity"). Topology spread constraints with ``whenUnsatisfiable:
DoNotSchedule`` (``bot.core.remedies.spread``) count the same pods; when they alone rule
every matching node out, ``why`` is "spread" ("affinity_spread" when both kinds do).
Without ``peers`` (not read), only the common form is
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
from bot.core.remedies.spread import Spread

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


class Rules:
    """Where the rules that count other pods keep a pod off a node: topology spread
    (``bot.core.remedies.spread``), then inter-pod affinity (``bot.core.remedies.affinity``),
    in kube-scheduler's filter order. ``refusal(labels)`` is None, ``"spread"`` or one of
    the affinity reasons."""

    def __init__(self, affinity: Filter, spread: Spread | None) -> None:
        self.affinity = affinity
        self.spread = spread

    def refusal(self, node_labels: dict[str, str]) -> str | None:
        if self.spread is not None and (why := self.spread.refusal(node_labels)) is not None:
            return why
        return self.affinity.refusal(node_labels)


def affinity_filter(
    view: ClusterView, pod: PodInfo, peers: list[PeerPod], *, cordoning: bool = False
) -> Rules:
    """The rules that count other pods for ``pod`` among ``peers``, read once: required
    inter-pod affinity, and topology spread when the pod has DoNotSchedule constraints and
    every node's room was read. ``cordoning``: the plan cordons the node first (tier 1), so
    its room is counted as cordoned (its unschedulable taint matters to a
    ``nodeTaintsPolicy: Honor`` spread constraint)."""
    sched = pod.scheduling
    spread = None
    if sched is not None and sched.spread_constraints and view.room is not None:
        rooms = [
            r.model_copy(update={"unschedulable": True})
            if cordoning and r.name == view.node.name
            else r
            for r in view.room
        ]
        spread = Spread(
            namespace=pod.namespace,
            labels=pod.labels,
            sched=sched,
            rooms=rooms,
            peers=peers,
        )
    return Rules(
        Filter(
            namespace=pod.namespace,
            labels=pod.labels,
            affinity=sched.affinity_terms if sched is not None else [],
            anti_affinity=sched.anti_affinity_terms if sched is not None else [],
            peers=peers,
            labels_of={r.name: r.labels for r in view.room or []},
            namespace_labels=view.namespace_labels,
        ),
        spread,
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


HOSTNAME = "kubernetes.io/hostname"


def _new_node(labels: dict[str, str]) -> dict[str, str]:
    """The labels of a node an autoscaler would add to the pool of a node with ``labels``:
    the same, with a hostname no node has yet."""
    return {**labels, HOSTNAME: "\x00a node not yet created"}


def _rules_why(refused: dict[str, str | None]) -> str:
    """Why every matching node was refused by the rules that count other pods: ``spread``
    (topology spread alone), ``affinity`` (inter-pod affinity alone) or ``affinity_spread``."""
    kinds = {"spread" if why == "spread" else "affinity" for why in refused.values() if why}
    return "affinity_spread" if len(kinds) > 1 else kinds.pop() if kinds else "affinity"


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
        refused: dict[str, str | None] = {}
        if peers is None:
            taken = sibling_nodes(view, pod) if sched.spread_from_siblings else set()
            matching = [r for r in rooms.values() if matches_node(sched, r) and r.name not in taken]
            allowed = grows = matching
        else:
            matching = [r for r in rooms.values() if matches_node(sched, r)]
            rules = affinity_filter(view, pod, peers, cordoning=True)
            refused = {r.name: rules.refusal(r.labels) for r in matching}
            allowed = [r for r in matching if refused[r.name] is None]
            # a node the autoscaler adds beside r is a new hostname: no pod there yet, so a
            # rule by hostname (one replica per node, spread per node) no longer refuses it
            grows = [
                r
                for r in matching
                if refused[r.name] is None or rules.refusal(_new_node(r.labels)) is None
            ]
        fitting = [r for r in allowed if not short_of(sched.requests, r.free)]
        if fitting:
            best = max(fitting, key=lambda r: (r.free.get("memory", 0), r.name))
            rooms[best.name] = _take(best, sched.requests)
            place(pod, best.name, peers)
            continue
        pools = sorted({p for r in grows if (p := pool_of(r.labels)) is not None})
        if pools:
            label, name, scaler = pools[0]
            gpu_pool = not pod.accelerated and all(is_gpu_room(r) for r in grows)
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
        why = "no_match" if not matching else _rules_why(refused) if not allowed else "no_room"
        if blocked:
            why = "pool_limit"
        notes.append(PlanNote(code="evicted_pending", params={"pod": pod.key, "why": why}))
    return notes
