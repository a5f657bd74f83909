"""The kubelet's admission of a pod bound by ``spec.nodeName`` (no scheduler ran), as the
kubelet's admit handlers decide it, in their order:

1. Eviction manager (pkg/kubelet/eviction ``Admit``): with no pressure condition, admit.
   Critical pods (priority >= 2000000000) are always admitted. With MemoryPressure as the
   ONLY condition, admit pods that are not BestEffort, and BestEffort pods that tolerate the
   ``node.kubernetes.io/memory-pressure:NoSchedule`` taint. Anything else (DiskPressure,
   PIDPressure) refuses: reason ``Evicted``, message ``The node had condition: [X]. ``.
2. Predicate handler (pkg/kubelet/lifecycle/predicate.go, ``noderesources.Fits``): the pod
   count, then cpu, memory, ephemeral-storage and extended resources the node advertises,
   against allocatable minus what the node's other running pods request. The first shortfall
   refuses: ``OutOfpods`` / ``OutOfcpu`` / ``OutOfmemory`` / ``OutOf<resource>``, message
   ``Node didn't have enough resource: R, requested: N, used: N, capacity: N`` (cpu in
   millicores). For a critical pod the kubelet instead preempts (``Preempting``: "Preempted in
   order to admit critical pod") non-critical pods on the node, BestEffort first, until it
   fits (the real kubelet picks a minimal set per QoS class; here: in name order).

A refused pod is Failed with that reason and ``Pod was rejected: <message>``, and the kubelet
records the same reason and message as a Warning event on the pod.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from gpunode_sandbox.kubesim import recorder
from gpunode_sandbox.kubesim.defaults import qos_class
from gpunode_sandbox.kubesim.podrequests import amount, pod_requests

if TYPE_CHECKING:
    from gpunode_sandbox.kubesim.crud import ApiCore

Obj = dict[str, Any]
CRITICAL_PRIORITY = 2_000_000_000
PRESSURES = ("MemoryPressure", "DiskPressure", "PIDPressure")
_FIT_ORDER = ("cpu", "memory", "ephemeral-storage")
_QOS_ORDER = {"BestEffort": 0, "Burstable": 1, "Guaranteed": 2}
PREEMPTED = "Preempted in order to admit critical pod"


@dataclass(frozen=True)
class Admission:
    """``admit`` and, when refused, the kubelet's reason and message; ``victims`` are the
    pods a critical pod preempts to fit."""

    admit: bool
    reason: str = ""
    message: str = ""
    victims: list[Obj] = field(default_factory=list)


def _critical(pod: Obj) -> bool:
    return int((pod.get("spec") or {}).get("priority") or 0) >= CRITICAL_PRIORITY


def _tolerates_memory_pressure(pod: Obj) -> bool:
    for t in (pod.get("spec") or {}).get("tolerations") or []:
        if t.get("effect") not in (None, "", "NoSchedule"):
            continue
        if t.get("operator") == "Exists" and not t.get("key"):
            return True
        if t.get("key") == "node.kubernetes.io/memory-pressure":
            return True
    return False


def _conditions(node: Obj) -> list[str]:
    return [
        c["type"]
        for c in (node.get("status") or {}).get("conditions") or []
        if c.get("type") in PRESSURES and c.get("status") == "True"
    ]


def _shortfall(pod: Obj, node: Obj, others: list[Obj]) -> tuple[str, str] | None:
    alloc_raw = (node.get("status") or {}).get("allocatable") or {}
    alloc = {k: amount(k, v) for k, v in alloc_raw.items()}
    if "pods" in alloc and len(others) + 1 > alloc["pods"]:
        return "OutOfpods", _message("pods", 1, len(others), alloc["pods"])
    wanted = pod_requests(pod)
    used: dict[str, int] = {}
    for other in others:
        for name, n in pod_requests(other).items():
            used[name] = used.get(name, 0) + n
    extended = sorted(n for n in wanted if n not in (*_FIT_ORDER, "pods"))
    for name in (*_FIT_ORDER, *extended):
        if name not in wanted or (name not in alloc and name not in _FIT_ORDER):
            continue  # extended resources the node does not advertise are ignored
        need, cap = wanted[name], alloc.get(name, 0)
        if need and need > cap - used.get(name, 0):
            return f"OutOf{name}", _message(name, need, used.get(name, 0), cap)
    return None


def _message(resource: str, requested: int, used: int, capacity: int) -> str:
    return (
        f"Node didn't have enough resource: {resource}, requested: {requested}, "
        f"used: {used}, capacity: {capacity}"
    )


def admit(pod: Obj, node: Obj, others: list[Obj]) -> Admission:
    """The kubelet's verdict on ``pod`` for ``node`` whose running pods are ``others``."""
    conditions = _conditions(node)
    if conditions and not _critical(pod):
        only_memory = conditions == ["MemoryPressure"]
        if not (
            only_memory and (qos_class(pod) != "BestEffort" or _tolerates_memory_pressure(pod))
        ):
            return Admission(
                False, "Evicted", f"The node had condition: [{' '.join(conditions)}]. "
            )
    short = _shortfall(pod, node, others)
    if short is None:
        return Admission(True)
    if not _critical(pod):
        return Admission(False, *short)
    # critical pod: the kubelet preempts non-critical pods, BestEffort first, then Burstable,
    # then Guaranteed (pkg/kubelet/preemption), until it fits
    candidates = sorted(
        (o for o in others if not _critical(o)),
        key=lambda o: (
            _QOS_ORDER.get(qos_class(o), 3),
            o["metadata"].get("namespace", ""),
            o["metadata"]["name"],
        ),
    )
    left, victims = list(others), []
    for victim in candidates:
        left.remove(victim)
        victims.append(victim)
        if _shortfall(pod, node, left) is None:
            return Admission(True, victims=victims)
    return Admission(False, *short)


def admit_bound(api: ApiCore, pod: Obj, node: str) -> Admission:
    """Admit ``pod`` on ``node`` against the node's other running pods; preempted victims are
    Failed (``Preempting``) with a kubelet event, as the kubelet leaves them."""
    node_obj = api.store.get("nodes", None, node) or {}
    others = [
        p
        for p in api.store.list("pods")
        if (p.get("spec") or {}).get("nodeName") == node
        and (p.get("status") or {}).get("phase") not in ("Succeeded", "Failed")
        and p["metadata"]["uid"] != pod["metadata"]["uid"]
    ]
    verdict = admit(pod, node_obj, others)
    for victim in verdict.victims:
        failed = copy.deepcopy(victim)
        failed.setdefault("status", {}).update(
            phase="Failed", reason="Preempting", message=PREEMPTED
        )
        api.store.put("pods", failed)
        recorder.record(api, victim, "Preempting", PREEMPTED, component="kubelet", host=node)
    return verdict
