"""What every rule reads: the bundle, the view, the attribution, and fact helpers.

Built once per ``analyze`` call so rules share indexes instead of re-joining data.
Sources follow ``bot.core.diagnosis.findings.Fact``: ``procfs:/proc/meminfo``, ``cgroup:<path>``,
``k8s:pod/<ns>/<name>``, ``k8s:node/status.allocatable``, ``nvml:<uuid>``,
``psi:/proc/pressure/memory``, ``k8s:events``.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from bot.core.diagnosis.attribution import Attribution, PodUsage
from bot.core.diagnosis.findings import Fact, Unit
from bot.core.diagnosis.gpus import node_has_gpus
from bot.core.model.cluster import ClusterView, PodInfo, ResourceAllocation
from bot.core.model.evidence import EvidenceBundle
from bot.core.model.quantity import quantity_value

MEMINFO = "procfs:/proc/meminfo"
PSI = "psi:/proc/pressure/memory"
SOCKSTAT = "procfs:/proc/net/sockstat"
EVENTS = "k8s:events"
ALLOCATED = "k8s:node/allocated-resources"
ALLOCATABLE = "k8s:node/status.allocatable"
GPU_RESOURCE = "nvidia.com/gpu"


def fact(key: str, label: str, value: float | int | str | None, unit: Unit, source: str) -> Fact:
    return Fact(key=key, label=label, value=value, unit=unit, source=source)


def pod_source(pod: PodInfo | None, uid: str = "") -> str:
    return f"k8s:pod/{pod.namespace}/{pod.name}" if pod is not None else f"k8s:pod-uid/{uid}"


def ratio(part: float, whole: float | None) -> float | None:
    """``part / whole`` rounded to 4 places, None when the denominator is unknown or 0."""
    if not whole:
        return None
    return round(part / whole, 4)


def controller_of(pod: PodInfo | None) -> str | None:
    """``Kind/namespace/name`` of the pod's top controller, None for bare pods."""
    if pod is None or pod.top_owner is None:
        return None
    return f"{pod.top_owner.kind}/{pod.namespace}/{pod.top_owner.name}"


@dataclass(frozen=True)
class Context:
    bundle: EvidenceBundle
    view: ClusterView | None
    attr: Attribution
    node: str
    now: datetime

    @property
    def mem_total(self) -> int | None:
        if self.bundle.meminfo is not None and self.bundle.meminfo.mem_total_bytes > 0:
            return self.bundle.meminfo.mem_total_bytes
        if self.bundle.free is not None and self.bundle.free.total_bytes > 0:
            return self.bundle.free.total_bytes
        return None

    def allocated(self, resource: str) -> ResourceAllocation | None:
        if self.view is None:
            return None
        for row in self.view.allocated:
            if row.resource == resource:
                return row
        return None

    @property
    def gpu_allocatable(self) -> int | None:
        if self.view is None:
            return None
        value = quantity_value(self.view.node.allocatable.get(GPU_RESOURCE))
        return int(value) if value is not None else None

    @property
    def is_gpu_node(self) -> bool:
        """``bot.core.diagnosis.gpus.node_has_gpus``: the one definition of a GPU node."""
        return node_has_gpus(self.bundle, self.view)

    def ranked_pods(self) -> list[PodUsage]:
        """Pods with a known working set, biggest first (ties broken by key: deterministic)."""
        known = [p for p in self.attr.pods.values() if p.working_set_bytes is not None]
        return sorted(known, key=lambda p: (-(p.working_set_bytes or 0), p.key))
