"""Topology spread constraints with ``whenUnsatisfiable: DoNotSchedule``, as kube-scheduler's
``PodTopologySpread`` filter decides them. Pure: no I/O.

For a pod being placed, per constraint (``SpreadConstraint``; ``ScheduleAnyway`` ones only
score and are never read):

1. **Eligible nodes.** A node counts when it carries the topology key of *every* one of the
   pod's constraints, and, per constraint, when ``nodeAffinityPolicy`` is ``Honor`` (the
   default) the pod's node selector and required node affinity take it, and when
   ``nodeTaintsPolicy`` is ``Honor`` (default ``Ignore``) the pod tolerates its
   ``NoSchedule``/``NoExecute`` taints (a cordoned node carries
   ``node.kubernetes.io/unschedulable:NoSchedule``). A cordoned node is otherwise a domain
   like any other: it counts, with the pods still on it.
2. **Counts.** Each eligible node's domain (its value of the key) counts the existing pods on
   it that are in the pod's namespace, not terminating, and selected by the constraint's
   selector. A nil or empty selector counts no pod.
3. **Global minimum.** The smallest count over the domains; 0 when there are fewer domains
   than ``minDomains``. With no eligible domain at all, the constraint does not filter.
4. **Filter.** A node without the key fails. Otherwise, with ``self`` = 1 when the selector
   selects the pod's own labels, the node fails when ``count(domain) + self - minimum >
   maxSkew``.

As in ``bot.core.remedies.affinity``, "existing pods" are the peers the gateway read less
those leaving, plus the pods the plan placed earlier.
"""

from __future__ import annotations

from collections.abc import Mapping

from bot.core.model.cluster import RoomOnNode, Taint
from bot.core.model.workloads import LabelSelector, PeerPod, PodScheduling, SpreadConstraint
from bot.core.remedies.affinity import selects
from bot.core.remedies.placement import UNSCHEDULABLE_TAINT, node_affinity_matches, tolerates

Labels = Mapping[str, str]


def _counts_nothing(selector: LabelSelector | None) -> bool:
    return selector is None or (not selector.match_labels and not selector.match_expressions)


def _untolerated(sched: PodScheduling, room: RoomOnNode) -> bool:
    taints = list(room.taints)
    if room.unschedulable and not any(t.key == UNSCHEDULABLE_TAINT for t in taints):
        taints.append(Taint(key=UNSCHEDULABLE_TAINT, effect="NoSchedule"))
    return any(
        t.effect in ("NoSchedule", "NoExecute") and not tolerates(sched.tolerations, t)
        for t in taints
    )


class Spread:
    """The spread filter for one pod over a snapshot of every node (``rooms``) and the
    existing pods (``peers``): counts once, then ``refusal`` per node."""

    def __init__(
        self,
        *,
        namespace: str,
        labels: Labels,
        sched: PodScheduling,
        rooms: list[RoomOnNode],
        peers: list[PeerPod],
    ) -> None:
        self.constraints: list[SpreadConstraint] = list(sched.spread_constraints)
        self.labels = labels
        keys = {c.topology_key for c in self.constraints}
        on_node: dict[str, list[PeerPod]] = {}
        for p in peers:
            if p.namespace == namespace and not p.terminating:
                on_node.setdefault(p.node, []).append(p)
        #: per constraint: domain value -> matching pods
        self.counts: list[dict[str, int]] = []
        for c in self.constraints:
            counts: dict[str, int] = {}
            for room in rooms:
                if not keys <= room.labels.keys():
                    continue
                if c.node_affinity_policy == "Honor" and not node_affinity_matches(
                    sched, room.labels
                ):
                    continue
                if c.node_taints_policy == "Honor" and _untolerated(sched, room):
                    continue
                value = room.labels[c.topology_key]
                found = 0
                if not _counts_nothing(c.selector):
                    found = sum(
                        1 for p in on_node.get(room.name, []) if selects(c.selector, p.labels)
                    )
                counts[value] = counts.get(value, 0) + found
            self.counts.append(counts)

    def refusal(self, node_labels: Labels) -> str | None:
        """``"spread"`` when a constraint keeps the pod off a node with ``node_labels``."""
        for c, counts in zip(self.constraints, self.counts, strict=True):
            if c.topology_key not in node_labels:
                return "spread"
            if not counts:
                continue  # no eligible domain: kube-scheduler skips the constraint
            minimum = 0 if len(counts) < c.min_domains else min(counts.values())
            own = 1 if selects(c.selector, self.labels) else 0
            if counts.get(node_labels[c.topology_key], 0) + own - minimum > c.max_skew:
                return "spread"
        return None
