"""The stand-in scheduler's PodTopologySpread filter, and the API server's merge of
``matchLabelKeys`` into label selectors at pod creation.

Mirrors kube-scheduler's ``podtopologyspread`` plugin (``filtering.go``, ``common.go``),
written here from its rules and not from gpunode's code (the stand-in is an independent
check). Only constraints with ``whenUnsatisfiable: DoNotSchedule`` filter; ``ScheduleAnyway``
ones score, which the stand-in does not model, so they never keep a pod off a node. For a
pod, over every node of the cluster:

- a node takes part when it has the ``topologyKey`` label of every hard constraint of the
  pod; then, for each constraint, when ``nodeAffinityPolicy`` is ``Honor`` (the default)
  only if the pod's ``nodeSelector`` and required node affinity match it, and when
  ``nodeTaintsPolicy`` is ``Honor`` (default ``Ignore``) only if the pod tolerates every
  ``NoSchedule``/``NoExecute`` taint on it. Cordoned nodes are not left out by that (their
  ``node.kubernetes.io/unschedulable`` taint counts only under ``Honor``);
- the pods counted in a node's domain (the label's value) are those on it in the incoming
  pod's namespace, without a ``deletionTimestamp``, whose labels the selector matches; an
  empty or absent selector counts nothing;
- the global minimum is the smallest count among the domains, or 0 when there are fewer
  domains than ``minDomains`` (1 when unset); a constraint with no domain at all is skipped;
- a node fails when it lacks a constraint's key, or when the count in its domain, plus 1
  when the selector matches the pod itself, minus the minimum, exceeds ``maxSkew``.

``matchLabelKeys``: from 1.31 the API server adds, at pod creation, ``key In (value)`` to a
pod (anti-)affinity term's ``labelSelector`` for each ``matchLabelKeys`` key the pod has a
label for, and ``key NotIn (value)`` for ``mismatchLabelKeys``; from 1.33 it does the same
for a topology spread constraint's ``matchLabelKeys``. Before 1.34 the scheduler also merges
a spread constraint's keys itself when it reads the constraint (the only merge before 1.33).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from gpunode_sandbox.kubesim.selectors import match_label_selector

Obj = dict[str, Any]
LABEL_MISSING = "node(s) didn't match pod topology spread constraints (missing required label)"
SKEW = "node(s) didn't match pod topology spread constraints"


def _minor(kube_version: str) -> tuple[int, int]:
    major, minor = kube_version.lstrip("v").split(".")[:2]
    return int(major), int(minor)


def _merge(selector: Obj | None, labels: dict[str, str], keys: list[str], op: str) -> Obj | None:
    if selector is None or not keys:
        return selector
    adds = [{"key": k, "operator": op, "values": [labels[k]]} for k in keys if k in labels]
    if not adds:
        return selector
    merged = dict(selector)
    merged["matchExpressions"] = [*(selector.get("matchExpressions") or []), *adds]
    return merged


def merge_label_keys_at_creation(pod: Obj, kube_version: str) -> None:
    """What the API server writes into a new pod's selectors from its label keys."""
    version = _minor(kube_version)
    spec = pod.get("spec") or {}
    labels = (pod.get("metadata") or {}).get("labels") or {}
    if version >= (1, 31):
        for kind in ("podAffinity", "podAntiAffinity"):
            block = (spec.get("affinity") or {}).get(kind) or {}
            for term in block.get("requiredDuringSchedulingIgnoredDuringExecution") or []:
                sel = _merge(term.get("labelSelector"), labels, term.get("matchLabelKeys"), "In")
                sel = _merge(sel, labels, term.get("mismatchLabelKeys") or [], "NotIn")
                if sel is not None:
                    term["labelSelector"] = sel
    if version >= (1, 33):
        for c in spec.get("topologySpreadConstraints") or []:
            sel = _merge(c.get("labelSelector"), labels, c.get("matchLabelKeys") or [], "In")
            if sel is not None:
                c["labelSelector"] = sel


def _selects(selector: Obj | None, labels: dict[str, str]) -> bool:
    if selector is None:
        return False
    return match_label_selector(selector, labels) if selector else True


def _counts_nothing(selector: Obj | None) -> bool:
    return not selector or not (selector.get("matchLabels") or selector.get("matchExpressions"))


class TopologySpread:
    """The filter for one pod over one snapshot of the nodes and pods.

    ``node_fits(pod, node)``: whether the pod's node selector and required node affinity
    take the node; ``tolerated(pod, node)``: whether it tolerates the node's NoSchedule and
    NoExecute taints (the scheduler's own NodeAffinity and TaintToleration answers)."""

    def __init__(
        self,
        pod: Obj,
        nodes: Iterable[Obj],
        pods: Iterable[Obj],
        *,
        kube_version: str,
        node_fits: Any,
        tolerated: Any,
    ) -> None:
        spec = pod.get("spec") or {}
        meta = pod.get("metadata") or {}
        self.labels = dict(meta.get("labels") or {})
        scheduler_merges = _minor(kube_version) < (1, 34)
        self.constraints: list[Obj] = []
        for c in spec.get("topologySpreadConstraints") or []:
            if c.get("whenUnsatisfiable") != "DoNotSchedule":
                continue
            selector = c.get("labelSelector")
            if scheduler_merges:
                selector = _merge(selector, self.labels, c.get("matchLabelKeys") or [], "In")
            self.constraints.append({**c, "labelSelector": selector})
        namespace = meta.get("namespace")
        by_node: dict[str, list[Obj]] = {}
        for p in pods:
            pm = p.get("metadata") or {}
            where = (p.get("spec") or {}).get("nodeName")
            if where and pm.get("namespace") == namespace and not pm.get("deletionTimestamp"):
                by_node.setdefault(where, []).append(p)
        keys = [str(c.get("topologyKey") or "") for c in self.constraints]
        self.domains: list[dict[str, int]] = [{} for _ in self.constraints]
        for node in nodes:
            nlabels = (node.get("metadata") or {}).get("labels") or {}
            if any(k not in nlabels for k in keys):
                continue
            for i, c in enumerate(self.constraints):
                if (c.get("nodeAffinityPolicy") or "Honor") == "Honor" and not node_fits(pod, node):
                    continue
                if (c.get("nodeTaintsPolicy") or "Ignore") == "Honor" and not tolerated(pod, node):
                    continue
                value = nlabels[keys[i]]
                here = 0
                if not _counts_nothing(c["labelSelector"]):
                    for p in by_node.get(node["metadata"]["name"], []):
                        if _selects(c["labelSelector"], (p["metadata"].get("labels") or {})):
                            here += 1
                self.domains[i][value] = self.domains[i].get(value, 0) + here

    def reason(self, node: Obj) -> str | None:
        nlabels = (node.get("metadata") or {}).get("labels") or {}
        for c, domains in zip(self.constraints, self.domains, strict=True):
            key = str(c.get("topologyKey") or "")
            if key not in nlabels:
                return LABEL_MISSING
            if not domains:
                continue
            floor = min(domains.values())
            if len(domains) < int(c.get("minDomains") or 1):
                floor = 0
            itself = 1 if _selects(c["labelSelector"], self.labels) else 0
            if domains.get(nlabels[key], 0) + itself - floor > int(c.get("maxSkew") or 1):
                return SKEW
        return None
