"""The stand-in scheduler's InterPodAffinity filter, from the pod objects it stores.

Mirrors kube-scheduler's ``interpodaffinity`` plugin (``filtering.go``), written here from
its rules and not from gpunode's code (the stand-in is an independent check):

- a required ``podAffinity`` term is satisfied on a node when the node has the term's
  ``topologyKey`` label and some bound, non-terminated pod that matches *every* affinity
  term of the incoming pod runs on a node with the same value of that label. If no such pod
  runs anywhere (on a node with the keys) and the incoming pod matches its own terms, any
  node that has all the keys passes (the first pod of a group);
- a required ``podAntiAffinity`` term fails a node when a pod the term matches runs on a node
  with the same value of its ``topologyKey`` (a node without the label is not affected);
- an existing pod's required anti-affinity term that matches the incoming pod fails every
  node in the existing pod's domain of that term.

A term matches a pod when the pod's namespace is listed in ``namespaces`` or its
Namespace's labels match ``namespaceSelector`` (a term with neither means the namespace of
the pod that holds the term), and the pod's labels match ``labelSelector`` (absent: no pod).
The reasons are kube-scheduler's words.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from gpunode_sandbox.kubesim.selectors import match_label_selector

Obj = dict[str, Any]
AFFINITY = "node(s) didn't match pod affinity rules"
ANTI_AFFINITY = "node(s) didn't match pod anti-affinity rules"
EXISTING = "node(s) didn't satisfy existing pods anti-affinity rules"


def _required(pod: Obj, kind: str) -> list[Obj]:
    affinity = ((pod.get("spec") or {}).get("affinity") or {}).get(kind) or {}
    return list(affinity.get("requiredDuringSchedulingIgnoredDuringExecution") or [])


def _selects(selector: Obj | None, labels: dict[str, str]) -> bool:
    if selector is None:  # a nil LabelSelector selects nothing
        return False
    return match_label_selector(selector, labels) if selector else True


def _matches(term: Obj, owner: Obj, pod: Obj, ns_labels: dict[str, dict[str, str]]) -> bool:
    """Whether ``term`` (held by ``owner``) selects ``pod``."""
    meta = pod.get("metadata") or {}
    namespace = str(meta.get("namespace") or "")
    names = term.get("namespaces") or []
    ns_selector = term.get("namespaceSelector")
    if not names and ns_selector is None:
        names = [(owner.get("metadata") or {}).get("namespace")]
    in_scope = namespace in names or (
        ns_selector is not None and _selects(ns_selector, ns_labels.get(namespace, {}))
    )
    return in_scope and _selects(term.get("labelSelector"), meta.get("labels") or {})


class InterPodAffinity:
    """The filter over one snapshot of the cluster's nodes, pods and namespaces."""

    def __init__(self, nodes: Iterable[Obj], pods: Iterable[Obj], namespaces: Iterable[Obj]):
        self.labels = {
            n["metadata"]["name"]: dict(n["metadata"].get("labels") or {}) for n in nodes
        }
        self.pods = [
            p
            for p in pods
            if (p.get("spec") or {}).get("nodeName") in self.labels
            and (p.get("status") or {}).get("phase") not in ("Succeeded", "Failed")
        ]
        self.ns_labels = {
            n["metadata"]["name"]: dict(n["metadata"].get("labels") or {}) for n in namespaces
        }

    def _domain(self, pod: Obj, key: str) -> str | None:
        return self.labels[pod["spec"]["nodeName"]].get(key)

    def reason(self, pod: Obj, node: Obj) -> str | None:
        labels = (node.get("metadata") or {}).get("labels") or {}
        uid = (pod.get("metadata") or {}).get("uid")
        others = [p for p in self.pods if p["metadata"].get("uid") != uid]
        affinity = _required(pod, "podAffinity")
        if affinity:
            keys = [str(t.get("topologyKey") or "") for t in affinity]
            if any(k not in labels for k in keys):
                return AFFINITY
            matching = [
                p
                for p in others
                if all(_matches(t, pod, p, self.ns_labels) for t in affinity)
                and any(self._domain(p, k) is not None for k in keys)
            ]
            ok = all(any(self._domain(p, k) == labels[k] for p in matching) for k in keys)
            if not ok and not (
                not matching and all(_matches(t, pod, pod, self.ns_labels) for t in affinity)
            ):
                return AFFINITY
        for term in _required(pod, "podAntiAffinity"):
            key = str(term.get("topologyKey") or "")
            if key in labels and any(
                self._domain(p, key) == labels[key] and _matches(term, pod, p, self.ns_labels)
                for p in others
            ):
                return ANTI_AFFINITY
        for existing in others:
            for term in _required(existing, "podAntiAffinity"):
                key = str(term.get("topologyKey") or "")
                value = self._domain(existing, key)
                if (
                    value is not None
                    and labels.get(key) == value
                    and _matches(term, existing, pod, self.ns_labels)
                ):
                    return EXISTING
        return None
