"""What the node autoscalers read on pods and nodes, and what tier 1 owes them. Pure: no I/O.

Pods (the owner asked for it: tier 1 never evicts them, and names the annotation):
- ``karpenter.sh/do-not-disrupt: "true"`` blocks Karpenter's voluntary disruption of the
  pod's node (consolidation, drift). The value may also be a duration (``5m``): the
  protection then ends that long after the pod started (Karpenter's well-known annotations
  reference). A pod whose duration has passed is not protected by it.
- ``cluster-autoscaler.kubernetes.io/safe-to-evict: "false"``: the cluster autoscaler never
  evicts the pod, so it never scales its node down (cluster-autoscaler FAQ, "What types of
  pods can prevent CA from removing a node?").

Nodes: during an incident the cordoned node is kept from being scaled down under the
people who are diagnosing it (``NODE_PROTECTION``): ``cluster-autoscaler.kubernetes.io/
scale-down-disabled: "true"`` for the cluster autoscaler, ``karpenter.sh/do-not-disrupt:
"true"`` for Karpenter (on a Node it blocks consolidation and drift). Tier 1 adds only the keys
the node lacks and its undo removes exactly those (``protection_to_add``).

Node pools an autoscaler manages are recognised by the label each provisioner puts on its
nodes (``POOL_LABELS``): an evicted pod that fits no existing node but matches such a pool
makes the autoscaler add a node there.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime, timedelta
from typing import Any

from bot.core.model.actions import Step
from bot.core.model.annotations import DO_NOT_DISRUPT as DO_NOT_DISRUPT
from bot.core.model.annotations import NODE_PROTECTION as NODE_PROTECTION
from bot.core.model.annotations import POD_ANNOTATIONS as POD_ANNOTATIONS
from bot.core.model.annotations import SAFE_TO_EVICT as SAFE_TO_EVICT
from bot.core.model.annotations import SCALE_DOWN_DISABLED as SCALE_DOWN_DISABLED
from bot.core.model.cluster import PodInfo
from bot.core.model.durations import parse_duration
from bot.errors import UsageError

#: node label -> the autoscaler that provisions nodes carrying it. Karpenter labels every node
#: with its NodePool (v1; ``provisioner-name`` before v0.32); the managed node groups of EKS,
#: GKE and AKS, which the cluster autoscaler (or the cloud's own) scales, label their nodes
#: with the group's name.
POOL_LABELS: dict[str, str] = {
    "karpenter.sh/nodepool": "Karpenter",
    "karpenter.sh/provisioner-name": "Karpenter",
    "eks.amazonaws.com/nodegroup": "cluster autoscaler",
    "cloud.google.com/gke-nodepool": "cluster autoscaler",
    "kubernetes.azure.com/agentpool": "cluster autoscaler",
}


def _go_duration(text: str) -> timedelta | None:
    try:
        return parse_duration(text)
    except UsageError:
        return None


def pod_protection(pod: PodInfo, *, now: datetime | None = None) -> str | None:
    """Why autoscalers must not evict ``pod``: ``"do_not_disrupt"`` (Karpenter's annotation,
    ``true`` or a duration not yet over), ``"safe_to_evict_false"`` (the cluster
    autoscaler's), or None.

    ``now`` decides a duration-valued do-not-disrupt (protected until the pod's start plus
    the duration); without ``now`` or a start time it counts as protection (the safe side),
    and so does a value that is no duration. ``"true"`` / ``"false"`` are compared exactly,
    as the autoscalers compare them."""
    value = pod.annotations.get(DO_NOT_DISRUPT, "")
    if value == "true":
        return "do_not_disrupt"
    if value and value != "false":
        span = _go_duration(value)
        over = (
            span is not None
            and now is not None
            and pod.created_at is not None
            and now >= pod.created_at + span
        )
        if not over:  # an unreadable value protects too: the owner meant something by it
            return "do_not_disrupt"
    if pod.annotations.get(SAFE_TO_EVICT) == "false":
        return "safe_to_evict_false"
    return None


def protection_to_add(annotations: Mapping[str, str]) -> dict[str, str]:
    """The scale-down protection the node lacks (what tier 1 adds, and later removes)."""
    return {k: v for k, v in NODE_PROTECTION.items() if annotations.get(k) != v}


def pool_of(labels: Mapping[str, str]) -> tuple[str, str, str] | None:
    """(label, pool name, autoscaler) when an autoscaler manages the node's pool."""
    for label, scaler in POOL_LABELS.items():
        if name := labels.get(label):
            return label, name, scaler
    return None


def release_steps(actions: Iterable[tuple[str, Mapping[str, Any] | None]]) -> list[Step]:
    """At resolve: the steps that remove the scale-down protection the incident's actions
    added and nobody has undone yet. ``actions``: (state, stored result) of each action;
    only applied ones (``succeeded``/``failed``: an ``undone`` one already removed it) and
    only their recorded ``annotate_node`` undo steps, so a key that was on the node before the
    incident stays as it was."""
    out: list[Step] = []
    for state, result in actions:
        if state not in ("succeeded", "failed") or not result:
            continue
        for raw in result.get("undo") or []:
            step = Step.model_validate(raw)
            if step.verb == "annotate_node":
                out.append(step)
    return out
