"""The stand-in's scheduler: binds pods that have no ``nodeName``, as kube-scheduler does.

Filters (kube-scheduler plugins): NodeUnschedulable (a cordoned node, unless the pod
tolerates ``node.kubernetes.io/unschedulable:NoSchedule``), TaintToleration (``NoSchedule``
and ``NoExecute``), NodeAffinity (``nodeSelector`` and required node affinity terms) and
NodeResourcesFit (every requested resource, extended ones such as ``nvidia.com/gpu``
included, plus the ``pods`` count, against allocatable minus what the node's
non-terminated pods request), PodTopologySpread (``DoNotSchedule`` constraints: ``spread``)
and InterPodAffinity (required pod affinity and anti-affinity, the incoming pod's and the
existing pods': ``interpod``). Score: the preferred node first
(where the pod ran), then the node with most free memory, then the name.

When nothing fits and the pod's ``preemptionPolicy`` is not ``Never``, preemption looks for
one node where removing pods of *lower* priority (lowest first) makes room; the victims are
deleted with a ``Preempted`` event and the pod is bound there (kube-scheduler nominates the
node and binds after the victims terminate; the stand-in's victims go at once). Otherwise
the pod stays ``Pending`` with ``PodScheduled=False`` (reason ``Unschedulable``) and a
``FailedScheduling`` event whose message counts the reasons per node, in kube-scheduler's
words: ``0/3 nodes are available: 1 Insufficient nvidia.com/gpu, 2 node(s) were
unschedulable. preemption: ...``.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from gpunode_sandbox.kubesim import podrequests
from gpunode_sandbox.kubesim.interpod import InterPodAffinity
from gpunode_sandbox.kubesim.recording import record_event
from gpunode_sandbox.kubesim.spread import TopologySpread

if TYPE_CHECKING:
    from gpunode_sandbox.kubesim.crud import ApiCore

Obj = dict[str, Any]
UNSCHEDULABLE = "node.kubernetes.io/unschedulable"


def pod_requests(pod: Obj) -> dict[str, int]:
    """Requests as the scheduler sums them (``podrequests``), plus one ``pods`` slot."""
    return {**podrequests.pod_requests(pod), "pods": 1}


def _tolerated(tolerations: list[Obj], taint: Obj) -> bool:
    for t in tolerations:
        if t.get("effect") and t["effect"] != taint.get("effect"):
            continue
        if t.get("operator") == "Exists" and (not t.get("key") or t["key"] == taint.get("key")):
            return True
        if t.get("key") == taint.get("key") and (t.get("value") or "") == (
            taint.get("value") or ""
        ):
            return True
    return False


def _expression(expr: Obj, labels: dict[str, str]) -> bool:
    key, op, values = str(expr.get("key")), expr.get("operator"), expr.get("values") or []
    if op == "In":
        return labels.get(key) in values
    if op == "NotIn":
        return labels.get(key) not in values
    if op == "Exists":
        return key in labels
    if op == "DoesNotExist":
        return key not in labels
    if op in ("Gt", "Lt") and key in labels and values:
        try:
            a, b = int(labels[key]), int(values[0])
        except ValueError:
            return False
        return a > b if op == "Gt" else a < b
    return False


@dataclass
class Decision:
    node: str | None
    victims: list[Obj] = field(default_factory=list)
    message: str = ""


class Scheduler:
    #: the PodTopologySpread filter; a test turns it off to show its check would fail
    spread_filter: bool = True

    def __init__(self, api: ApiCore) -> None:
        self.api = api

    def free(
        self, node: Obj, *, without: frozenset[str] | set[str] = frozenset()
    ) -> dict[str, int]:
        """Allocatable minus the requests of the node's non-terminated pods (but ``without``
        the pods of these uids)."""
        name = node["metadata"]["name"]
        alloc = (node.get("status") or {}).get("allocatable") or {}
        free = {k: podrequests.amount(k, v) for k, v in alloc.items()}
        for p in self.api.store.list("pods"):
            if (p.get("spec") or {}).get("nodeName") != name or p["metadata"]["uid"] in without:
                continue
            if (p.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
                continue
            for k, v in pod_requests(p).items():
                free[k] = free.get(k, 0) - v
        return free

    def filter(self, pod: Obj, node: Obj) -> str | None:
        """None when ``node`` passes every filter but resources, else the reason."""
        spec, nspec = pod.get("spec") or {}, node.get("spec") or {}
        tolerations = spec.get("tolerations") or []
        cordon = {"key": UNSCHEDULABLE, "effect": "NoSchedule"}
        if nspec.get("unschedulable") and not _tolerated(tolerations, cordon):
            return "node(s) were unschedulable"
        for taint in nspec.get("taints") or []:
            if taint.get("key") == UNSCHEDULABLE:
                continue
            if taint.get("effect") in ("NoSchedule", "NoExecute") and not _tolerated(
                tolerations, taint
            ):
                key, value = taint.get("key"), taint.get("value") or ""
                return f"node(s) had untolerated taint {{{key}: {value}}}"
        if not self.node_affinity(pod, node):
            return "node(s) didn't match Pod's node affinity/selector"
        return None

    @staticmethod
    def node_affinity(pod: Obj, node: Obj) -> bool:
        """The NodeAffinity filter: ``nodeSelector`` and the required node affinity terms."""
        spec = pod.get("spec") or {}
        labels = (node.get("metadata") or {}).get("labels") or {}
        if any(labels.get(k) != v for k, v in (spec.get("nodeSelector") or {}).items()):
            return False
        required = (
            ((spec.get("affinity") or {}).get("nodeAffinity") or {}).get(
                "requiredDuringSchedulingIgnoredDuringExecution"
            )
            or {}
        ).get("nodeSelectorTerms") or []
        return not required or any(
            all(_expression(e, labels) for e in term.get("matchExpressions") or [])
            for term in required
        )

    @staticmethod
    def taints_tolerated(pod: Obj, node: Obj) -> bool:
        """Every ``NoSchedule``/``NoExecute`` taint of the node is tolerated (the cordon's
        ``node.kubernetes.io/unschedulable`` taint included, as it stands on the node)."""
        tolerations = (pod.get("spec") or {}).get("tolerations") or []
        return all(
            _tolerated(tolerations, t)
            for t in (node.get("spec") or {}).get("taints") or []
            if t.get("effect") in ("NoSchedule", "NoExecute")
        )

    def _short(self, pod: Obj, free: dict[str, int]) -> list[str]:
        return [k for k, v in pod_requests(pod).items() if v > free.get(k, 0)]

    def decide(self, pod: Obj, *, preferred: str | None = None) -> Decision:
        nodes = sorted(self.api.store.list("nodes"), key=lambda n: n["metadata"]["name"])
        reasons: Counter[str] = Counter()
        feasible: list[tuple[Obj, dict[str, int]]] = []
        passing: list[Obj] = []
        store = self.api.store
        interpod = InterPodAffinity(nodes, store.list("pods"), store.list("namespaces"))
        spread = TopologySpread(
            pod,
            nodes,
            store.list("pods"),
            kube_version=self.api.kube_version,
            node_fits=self.node_affinity,
            tolerated=self.taints_tolerated,
        )
        for node in nodes:
            why = self.filter(pod, node)
            if why is not None:
                reasons[why] += 1
                continue
            free = self.free(node)
            short = self._short(pod, free)
            why = spread.reason(node) if self.spread_filter else None
            why = why or interpod.reason(pod, node)
            if why is not None and not short:
                reasons[why] += 1
                continue
            if why is None:
                passing.append(node)
            if short:
                reasons[f"Insufficient {short[0]}" if short[0] != "pods" else "Too many pods"] += 1
                continue
            feasible.append((node, free))
        if feasible:
            feasible.sort(
                key=lambda nf: (
                    nf[0]["metadata"]["name"] != preferred,
                    -nf[1].get("memory", 0),
                    nf[0]["metadata"]["name"],
                )
            )
            return Decision(feasible[0][0]["metadata"]["name"])
        summary = ", ".join(f"{n} {r}" for r, n in sorted(reasons.items(), key=lambda x: x[0]))
        head = f"0/{len(nodes)} nodes are available: {summary}."
        if (pod.get("spec") or {}).get("preemptionPolicy") == "Never":
            return Decision(
                None, message=f"{head} preemption: not eligible due to preemptionPolicy=Never."
            )
        best = self._preemption(pod, passing)
        if best is not None:
            return best
        return Decision(
            None,
            message=f"{head} preemption: 0/{len(nodes)} nodes are available: "
            f"{len(nodes)} No preemption victims found for incoming pod.",
        )

    def _preemption(self, pod: Obj, nodes: list[Obj]) -> Decision | None:
        """DefaultPreemption: per node, remove every lower-priority pod, then reprieve them
        (highest priority first) while the pod still fits; pick the node whose victims have
        the lowest highest priority, then the fewest victims."""
        priority = int((pod.get("spec") or {}).get("priority") or 0)
        options: list[tuple[tuple[int, int, str], Decision]] = []
        for node in nodes:
            name = node["metadata"]["name"]
            lower = [
                p
                for p in self.api.store.list("pods")
                if (p.get("spec") or {}).get("nodeName") == name
                and int((p.get("spec") or {}).get("priority") or 0) < priority
                and (p.get("status") or {}).get("phase") not in ("Succeeded", "Failed")
            ]
            removed = {p["metadata"]["uid"] for p in lower}
            if not lower or self._short(pod, self.free(node, without=removed)):
                continue
            for p in sorted(
                lower, key=lambda p: (-int(p["spec"].get("priority") or 0), p["metadata"]["name"])
            ):
                trial = removed - {p["metadata"]["uid"]}
                if not self._short(pod, self.free(node, without=trial)):
                    removed = trial  # reprieved
            chosen = [p for p in lower if p["metadata"]["uid"] in removed]
            top = max(int(v["spec"].get("priority") or 0) for v in chosen)
            options.append(((top, len(chosen), name), Decision(name, victims=chosen)))
        if not options:
            return None
        return min(options, key=lambda o: o[0])[1]

    def preempt(self, pod: Obj, decision: Decision) -> None:
        """Delete the victims, each with a ``Preempted`` event (as kube-scheduler records)."""
        from gpunode_sandbox.kubesim.resources import STORED

        for victim in decision.victims:
            meta = victim["metadata"]
            record_event(
                self.api,
                victim,
                reason="Preempted",
                message=f"Preempted by pod {pod['metadata'].get('uid', '')} on node "
                f"{decision.node}",
                component="default-scheduler",
            )
            if self.api.store.get("pods", meta["namespace"], meta["name"]) is not None:
                self.api.delete(STORED["pods"], meta["namespace"], meta["name"])
