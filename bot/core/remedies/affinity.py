"""Required inter-pod affinity and anti-affinity, as kube-scheduler's ``InterPodAffinity``
filter decides them. Pure: no I/O.

A term (``PodAffinityTerm``) matches a pod when the pod's namespace is one the term names
(or its labels match the term's ``namespaceSelector``) and its labels match the term's
selector. A node's *domain* for a term is the value of the term's ``topologyKey`` label on
it. For a pod being placed on a node (``InterPodAffinity`` Filter, ``filtering.go``):

1. **Affinity.** The node must carry every term's topology key, and for every term some
   existing pod that matches *all* the pod's affinity terms must run in the node's domain.
   The exception keeps the first pod of a group schedulable: when no existing pod anywhere
   matches all the terms, and the pod matches its own terms, any node carrying the keys
   passes.
2. **Anti-affinity.** For every term, no existing pod it matches runs in the node's domain
   (a node without the key is not in any domain: the term does not apply there).
3. **Existing pods' anti-affinity.** No existing pod whose required anti-affinity term
   matches the incoming pod runs in the node's domain for that term.

"Existing pods" are bound, non-terminated pods (``PeerPod``); the caller removes those that
are leaving (the evicted or restarted ones) and adds the pods it has placed so far, so a
plan's later pods see its earlier ones.
"""

from __future__ import annotations

from collections.abc import Mapping

from bot.core.model.workloads import LabelSelector, PeerPod, PodAffinityTerm, Requirement

Labels = Mapping[str, str]


def _expression(req: Requirement, labels: Labels) -> bool:
    value = labels.get(req.key)
    if req.operator == "In":
        return value is not None and value in req.values
    if req.operator == "NotIn":
        return value is None or value not in req.values
    if req.operator == "Exists":
        return value is not None
    if req.operator == "DoesNotExist":
        return value is None
    return False  # an operator a LabelSelector does not allow selects nothing


def selects(selector: LabelSelector | None, labels: Labels) -> bool:
    """``metav1.LabelSelectorAsSelector``: nil selects nothing, empty selects everything."""
    if selector is None:
        return False
    if any(labels.get(k) != v for k, v in selector.match_labels.items()):
        return False
    return all(_expression(e, labels) for e in selector.match_expressions)


def term_matches(
    term: PodAffinityTerm,
    namespace: str,
    labels: Labels,
    namespace_labels: Mapping[str, Labels],
) -> bool:
    """Whether ``term`` selects a pod of ``namespace`` with ``labels``."""
    in_scope = namespace in term.namespaces or (
        term.namespace_selector is not None
        and selects(term.namespace_selector, namespace_labels.get(namespace, {}))
    )
    return in_scope and selects(term.selector, labels)


def placed(
    pod_key: str, namespace: str, labels: Labels, node: str, terms: list[PodAffinityTerm]
) -> PeerPod:
    """A pod the plan has put on ``node``: an existing pod for the pods placed after it."""
    return PeerPod(
        key=pod_key,
        namespace=namespace,
        labels=dict(labels),
        node=node,
        anti_affinity_terms=terms,
    )


def refusal(
    *,
    namespace: str,
    labels: Labels,
    affinity: list[PodAffinityTerm],
    anti_affinity: list[PodAffinityTerm],
    node_labels: Labels,
    peers: list[PeerPod],
    labels_of: Mapping[str, Labels],
    namespace_labels: Mapping[str, Labels],
) -> str | None:
    """Why a pod (``namespace``, ``labels``, its required terms) may not run on a node with
    ``node_labels`` among ``peers`` (``labels_of``: node name -> labels, for the peers'
    domains): ``"affinity"``, ``"anti_affinity"``, ``"existing_anti_affinity"``, or None
    when the node passes."""
    return Filter(
        namespace=namespace,
        labels=labels,
        affinity=affinity,
        anti_affinity=anti_affinity,
        peers=peers,
        labels_of=labels_of,
        namespace_labels=namespace_labels,
    ).refusal(node_labels)


class Filter:
    """``refusal`` for one pod over many nodes: the peers are read once (kube-scheduler's
    PreFilter counts), then each node costs a lookup per term and per node label."""

    def __init__(
        self,
        *,
        namespace: str,
        labels: Labels,
        affinity: list[PodAffinityTerm],
        anti_affinity: list[PodAffinityTerm],
        peers: list[PeerPod],
        labels_of: Mapping[str, Labels],
        namespace_labels: Mapping[str, Labels],
    ) -> None:
        self.affinity = affinity
        # affinity: the domains (key, value) holding a pod that matches every term
        self.affine: set[tuple[str, str]] = set()
        for p in peers:
            node = labels_of.get(p.node)
            if node is None or not affinity:
                continue
            if all(term_matches(t, p.namespace, p.labels, namespace_labels) for t in affinity):
                for t in affinity:
                    if t.topology_key in node:
                        self.affine.add((t.topology_key, node[t.topology_key]))
        self.first = not self.affine and all(
            term_matches(t, namespace, labels, namespace_labels) for t in affinity
        )
        # anti-affinity: the domains holding a pod one of the pod's terms matches
        self.shunned: set[tuple[str, str]] = set()
        for term in anti_affinity:
            for p in peers:
                node = labels_of.get(p.node)
                if (
                    node is not None
                    and term.topology_key in node
                    and term_matches(term, p.namespace, p.labels, namespace_labels)
                ):
                    self.shunned.add((term.topology_key, node[term.topology_key]))
        # existing pods' anti-affinity: the domains of pods whose terms match the pod
        self.barred: set[tuple[str, str]] = set()
        for p in peers:
            node = labels_of.get(p.node)
            for term in p.anti_affinity_terms:
                if (
                    node is not None
                    and term.topology_key in node
                    and term_matches(term, namespace, labels, namespace_labels)
                ):
                    self.barred.add((term.topology_key, node[term.topology_key]))

    def refusal(self, node_labels: Labels) -> str | None:
        if self.affinity:
            if any(t.topology_key not in node_labels for t in self.affinity):
                return "affinity"
            satisfied = all(
                (t.topology_key, node_labels[t.topology_key]) in self.affine for t in self.affinity
            )
            if not satisfied and not self.first:
                return "affinity"
        if self.shunned and any(pair in self.shunned for pair in node_labels.items()):
            return "anti_affinity"
        if self.barred and any(pair in self.barred for pair in node_labels.items()):
            return "existing_anti_affinity"
        return None
