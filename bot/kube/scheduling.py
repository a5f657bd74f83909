"""API JSON -> what the scheduler matches (``bot.core.model.workloads.PodScheduling``) and each
node's free room (``bot.core.model.cluster.RoomOnNode``). Pure (``parse_*``).

Units as ``bot.core.model.workloads`` states: cpu in millicores, memory in bytes, every other
resource in units; requests as ``PodRequests`` computes them (``bot.core.diagnosis.allocation``),
plus one ``pods`` slot per pod.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from bot.core.diagnosis.allocation import counted_pods, node_allocatable, pod_requests_and_limits
from bot.core.model.cluster import RoomOnNode, Taint
from bot.core.model.quantity import Quantity
from bot.core.model.workloads import (
    LabelSelector,
    PodAffinityTerm,
    PodScheduling,
    PodSlot,
    Requirement,
    SpreadConstraint,
    Toleration,
)
from bot.kube.cutting import slot_key

Obj = Mapping[str, Any]


def _units(resources: Mapping[str, Quantity]) -> dict[str, int]:
    return {
        name: q.milli_value() if name == "cpu" else q.value()
        for name, q in resources.items()
        if not q.is_zero()
    }


def pod_requests(pod: Obj) -> dict[str, int]:
    requests, _ = pod_requests_and_limits(pod)
    return request_units(requests)


def request_units(requests: Mapping[str, Quantity]) -> dict[str, int]:
    """A pod's ``PodRequests`` in the scheduler's units, plus its one ``pods`` slot."""
    return _units(requests) | {"pods": 1}


def parse_scheduling(pod: Obj) -> PodScheduling:
    spec = pod.get("spec") or {}
    affinity = ((spec.get("affinity") or {}).get("nodeAffinity") or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution"
    ) or {}
    terms = [
        [
            Requirement(
                key=str(e.get("key", "")),
                operator=str(e.get("operator", "")),
                values=[str(v) for v in e.get("values") or []],
            )
            for e in term.get("matchExpressions") or []
        ]
        for term in affinity.get("nodeSelectorTerms") or []
    ]
    return PodScheduling(
        requests=pod_requests(pod),
        tolerations=[
            Toleration(
                key=str(t.get("key") or ""),
                operator=str(t.get("operator") or "Equal"),
                value=str(t.get("value") or ""),
                effect=str(t.get("effect") or ""),
            )
            for t in spec.get("tolerations") or []
        ],
        node_selector={str(k): str(v) for k, v in (spec.get("nodeSelector") or {}).items()},
        required_terms=terms,
        preemption_policy=spec.get("preemptionPolicy"),
        spread_from_siblings=spreads_from_siblings(pod),
        affinity_terms=affinity_terms(pod, "podAffinity"),
        anti_affinity_terms=affinity_terms(pod, "podAntiAffinity"),
        spread_constraints=spread_constraints(pod),
        claims=sorted(
            str(v["persistentVolumeClaim"].get("claimName", ""))
            for v in spec.get("volumes") or []
            if isinstance(v.get("persistentVolumeClaim"), dict)
        ),
    )


def parse_selector(selector: Obj | None) -> LabelSelector | None:
    """A ``metav1.LabelSelector`` (None stays None: it selects nothing)."""
    if selector is None:
        return None
    return LabelSelector(
        match_labels={str(k): str(v) for k, v in (selector.get("matchLabels") or {}).items()},
        match_expressions=[
            Requirement(
                key=str(e.get("key", "")),
                operator=str(e.get("operator", "")),
                values=[str(v) for v in e.get("values") or []],
            )
            for e in selector.get("matchExpressions") or []
        ],
    )


def affinity_terms(pod: Obj, kind: str) -> list[PodAffinityTerm]:
    """The pod's required ``podAffinity`` or ``podAntiAffinity`` terms (``kind``), each with
    its namespaces resolved as kube-scheduler does: a term that names no namespace and has no
    ``namespaceSelector`` means the pod's own namespace."""
    spec, meta = pod.get("spec") or {}, pod.get("metadata") or {}
    raw = ((spec.get("affinity") or {}).get(kind) or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution"
    ) or []
    labels = {str(k): str(v) for k, v in (meta.get("labels") or {}).items()}
    out = []
    for t in raw:
        namespaces = [str(n) for n in t.get("namespaces") or []]
        ns_selector = parse_selector(t.get("namespaceSelector"))
        if not namespaces and ns_selector is None:
            namespaces = [str(meta.get("namespace") or "default")]
        selector = with_label_keys(
            parse_selector(t.get("labelSelector")), labels, t.get("matchLabelKeys"), "In"
        )
        selector = with_label_keys(selector, labels, t.get("mismatchLabelKeys"), "NotIn")
        out.append(
            PodAffinityTerm(
                selector=selector,
                namespaces=namespaces,
                namespace_selector=ns_selector,
                topology_key=str(t.get("topologyKey") or ""),
            )
        )
    return out


def with_label_keys(
    selector: LabelSelector | None,
    labels: Mapping[str, str],
    keys: Iterable[str] | None,
    operator: str,
) -> LabelSelector | None:
    """``selector`` with ``key <operator> (value)`` added for each of ``keys`` the pod's
    ``labels`` carry (a key it lacks is ignored; a nil selector stays nil: the API server
    refuses label keys without a labelSelector).

    This is what the API server does at pod creation for a pod (anti-)affinity term's
    ``matchLabelKeys`` (``In``) and ``mismatchLabelKeys`` (``NotIn``) from 1.31 (beta, GA in
    1.33), and for a topology spread constraint's ``matchLabelKeys`` from 1.33; before that
    kube-scheduler merged a spread constraint's keys itself, as an ``In``. A selector read
    back from a server that merged already holds the same requirement, so adding it again
    selects the same pods."""
    if selector is None or not keys:
        return selector
    extra = [
        Requirement(key=str(k), operator=operator, values=[labels[str(k)]])
        for k in keys
        if str(k) in labels
    ]
    if not extra:
        return selector
    have = {(e.key, e.operator, tuple(e.values)) for e in selector.match_expressions}
    added = [e for e in extra if (e.key, e.operator, tuple(e.values)) not in have]
    return selector.model_copy(update={"match_expressions": [*selector.match_expressions, *added]})


def spread_constraints(pod: Obj) -> list[SpreadConstraint]:
    """The pod's ``topologySpreadConstraints`` with ``whenUnsatisfiable: DoNotSchedule``
    (``ScheduleAnyway`` only scores), their ``matchLabelKeys`` merged (``with_label_keys``)
    and the policies defaulted as kube-scheduler does (minDomains 1, nodeAffinityPolicy
    Honor, nodeTaintsPolicy Ignore)."""
    spec, meta = pod.get("spec") or {}, pod.get("metadata") or {}
    labels = {str(k): str(v) for k, v in (meta.get("labels") or {}).items()}
    out = []
    for c in spec.get("topologySpreadConstraints") or []:
        if c.get("whenUnsatisfiable") != "DoNotSchedule":
            continue
        selector = with_label_keys(
            parse_selector(c.get("labelSelector")), labels, c.get("matchLabelKeys"), "In"
        )
        out.append(
            SpreadConstraint(
                max_skew=int(c.get("maxSkew") or 1),
                topology_key=str(c.get("topologyKey") or ""),
                selector=selector,
                min_domains=int(c.get("minDomains") or 1),
                node_affinity_policy="Ignore"
                if c.get("nodeAffinityPolicy") == "Ignore"
                else "Honor",
                node_taints_policy="Honor" if c.get("nodeTaintsPolicy") == "Honor" else "Ignore",
            )
        )
    return out


def selector_text(selector: LabelSelector) -> str:
    """A ``LabelSelector`` as the ``labelSelector`` query string the API server parses."""
    parts = [f"{k}={v}" for k, v in sorted(selector.match_labels.items())]
    for e in selector.match_expressions:
        if e.operator == "In":
            parts.append(f"{e.key} in ({','.join(e.values)})")
        elif e.operator == "NotIn":
            parts.append(f"{e.key} notin ({','.join(e.values)})")
        elif e.operator == "Exists":
            parts.append(e.key)
        elif e.operator == "DoesNotExist":
            parts.append(f"!{e.key}")
    return ",".join(parts)


def _selects(selector: Obj, labels: Mapping[str, str]) -> bool:
    """A label selector (matchLabels, matchExpressions) that matches ``labels``."""
    if not selector:
        return False
    if any(labels.get(k) != v for k, v in (selector.get("matchLabels") or {}).items()):
        return False
    for e in selector.get("matchExpressions") or []:
        key, op, values = e.get("key"), e.get("operator"), e.get("values") or []
        present = key in labels
        if (
            (op == "In" and labels.get(key) not in values)
            or (op == "NotIn" and present and labels.get(key) in values)
            or (op == "Exists" and not present)
            or (op == "DoesNotExist" and present)
        ):
            return False
    return True


def spreads_from_siblings(pod: Obj) -> bool:
    """A required pod anti-affinity, per node (``kubernetes.io/hostname``), against the pod's
    own labels: its replicas never share a node."""
    spec, labels = pod.get("spec") or {}, (pod.get("metadata") or {}).get("labels") or {}
    anti = ((spec.get("affinity") or {}).get("podAntiAffinity") or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution"
    ) or []
    return any(
        t.get("topologyKey") == "kubernetes.io/hostname"
        and _selects(t.get("labelSelector") or {}, labels)
        for t in anti
    )


def parse_volume_terms(pv: Obj) -> list[list[Requirement]]:
    """A PersistentVolume's ``spec.nodeAffinity.required`` terms ([] when it has none)."""
    required = ((pv.get("spec") or {}).get("nodeAffinity") or {}).get("required") or {}
    return [
        [
            Requirement(
                key=str(e.get("key", "")),
                operator=str(e.get("operator", "")),
                values=[str(v) for v in e.get("values") or []],
            )
            for e in term.get("matchExpressions") or []
        ]
        for term in required.get("nodeSelectorTerms") or []
    ]


def parse_room(node: Obj, pods: Iterable[Obj], *, slots: bool) -> RoomOnNode:
    """``node``'s free room; with ``slots``, the pods on it that preemption could remove."""
    on_node = counted_pods(node, pods)
    used: dict[str, int] = {}
    for pod in on_node:
        for name, value in pod_requests(pod).items():
            used[name] = used.get(name, 0) + value
    return room_from(node, used, [pod_slot(p) for p in on_node] if slots else [])


def pod_slot(pod: Obj) -> PodSlot:
    """What preempting ``pod`` would free (its requests, as ``pod_requests``)."""
    return slot_of(pod, pod_requests(pod))


def slot_of(pod: Obj, requests: dict[str, int]) -> PodSlot:
    key, priority = slot_key(pod)
    return PodSlot(key=key, priority=priority, requests=requests)


def room_from(node: Obj, used: Mapping[str, int], slots: list[PodSlot]) -> RoomOnNode:
    """``node``'s room from the requests its counted pods sum to (``used``), summed by the
    caller: a fleet read adds each page's pods and keeps only the sums and the slots."""
    meta, spec = node.get("metadata") or {}, node.get("spec") or {}
    free = _units(node_allocatable(node))
    for name, value in used.items():
        free[name] = free.get(name, 0) - value
    return RoomOnNode(
        name=str(meta.get("name", "")),
        unschedulable=bool(spec.get("unschedulable")),
        labels={str(k): str(v) for k, v in (meta.get("labels") or {}).items()},
        taints=[
            Taint(key=t.get("key", ""), value=t.get("value"), effect=t.get("effect", ""))
            for t in spec.get("taints") or []
        ],
        free=free,
        pods=slots,
    )
