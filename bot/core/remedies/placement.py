"""Where a restarted pod can go: the scheduler's filters, as data. Pure: no I/O.

A node takes a pod when it is not cordoned, every ``NoSchedule``/``NoExecute`` taint is
tolerated, the node selector and required node affinity match, every bound
PersistentVolume's node affinity matches (a local PV keeps the pod on its node: the
scheduler's VolumeBinding filter), and the pod's requests fit in what the node has free.
Preemption (only for ``preemptionPolicy: PreemptLowerPriority``)
removes pods of *lower* priority on one node, lowest first, until the pod fits; there is no
cross-node preemption (reference kubernetes.md section 3); victims as ``victims`` says.
"""

from __future__ import annotations

from bot.core.model.cluster import RoomOnNode, Taint
from bot.core.model.workloads import PodScheduling, Requirement, Toleration

#: the taint the API server keeps in step with spec.unschedulable
UNSCHEDULABLE_TAINT = "node.kubernetes.io/unschedulable"


def tolerates(tolerations: list[Toleration], taint: Taint) -> bool:
    for t in tolerations:
        if t.effect and t.effect != taint.effect:
            continue
        if t.operator == "Exists" and (not t.key or t.key == taint.key):
            return True
        if t.key == taint.key and t.operator in ("Equal", "") and t.value == (taint.value or ""):
            return True
    return False


def _requirement(req: Requirement, labels: dict[str, str]) -> bool:
    value = labels.get(req.key)
    if req.operator == "In":
        return value is not None and value in req.values
    if req.operator == "NotIn":
        return value is None or value not in req.values
    if req.operator == "Exists":
        return value is not None
    if req.operator == "DoesNotExist":
        return value is None
    if req.operator in ("Gt", "Lt") and value is not None and req.values:
        try:
            a, b = int(value), int(req.values[0])
        except ValueError:
            return False
        return a > b if req.operator == "Gt" else a < b
    return False


def matches_node(pod: PodScheduling, room: RoomOnNode) -> bool:
    """Every filter but resources: cordon, taints, node selector, required affinity."""
    cordon = Taint(key=UNSCHEDULABLE_TAINT, effect="NoSchedule")
    if room.unschedulable and not tolerates(pod.tolerations, cordon):
        return False
    for taint in room.taints:
        if taint.effect in ("NoSchedule", "NoExecute") and not tolerates(pod.tolerations, taint):
            return False
    for volume in pod.volume_terms:  # the PersistentVolumes' node affinity (local PVs)
        if volume and not any(all(_requirement(r, room.labels) for r in t) for t in volume):
            return False
    return node_affinity_matches(pod, room.labels)


def node_affinity_matches(pod: PodScheduling, labels: dict[str, str]) -> bool:
    """The pod's node selector and required node affinity take a node with ``labels``
    (kube-scheduler's ``GetRequiredNodeAffinity``)."""
    if any(labels.get(k) != v for k, v in pod.node_selector.items()):
        return False
    terms = pod.required_terms
    return not terms or any(all(_requirement(r, labels) for r in t) for t in terms)


def short_of(requests: dict[str, int], free: dict[str, int]) -> dict[str, int]:
    """What is missing for ``requests`` to fit in ``free`` (empty when it fits)."""
    return {k: v - free.get(k, 0) for k, v in requests.items() if v > 0 and v > free.get(k, 0)}


def fits(pod: PodScheduling, room: RoomOnNode) -> bool:
    return matches_node(pod, room) and not short_of(pod.requests, room.free)


def victims(pod: PodScheduling, priority: int, room: RoomOnNode) -> list[str] | None:
    """The pods preemption would remove on ``room`` so that ``pod`` fits, ``[]`` when it
    fits as is, None when even removing every lower-priority pod leaves too little.

    As kube-scheduler's DefaultPreemption selects them: remove every pod of lower priority,
    then reprieve them one by one, highest priority first, while the pod still fits."""
    if not matches_node(pod, room):
        return None
    if not short_of(pod.requests, room.free):
        return []
    lower = [s for s in room.pods if s.priority < priority]
    free = dict(room.free)
    for slot in lower:
        for k, v in slot.requests.items():
            free[k] = free.get(k, 0) + v
    if short_of(pod.requests, free):
        return None
    chosen: list[str] = []
    for slot in sorted(lower, key=lambda s: (-s.priority, s.key)):
        trial = {
            k: free.get(k, 0) - slot.requests.get(k, 0) for k in set(free) | set(slot.requests)
        }
        if not short_of(pod.requests, trial):
            free = trial  # reprieved: it keeps running
        else:
            chosen.append(slot.key)
    return sorted(chosen)
