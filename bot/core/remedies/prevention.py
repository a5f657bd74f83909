"""Parameters for the prevention kit, computed from one node's ClusterView (pure).

The kit (rendered by ``bot.render.prevention`` from ``templates/kube/prevention/``) is the
long-term half of the domain's write-up, corrected per reference/domain.md "Where the
common advice is wrong": per-namespace ``ResourceQuota`` with ``requests.nvidia.com/gpu``
(not OpenShift's ClusterResourceQuota), kubelet eviction settings and reservations (not a
node annotation), ``node_exporter`` ``_bytes`` metric names, descheduler ``v1alpha2``.

Every number here is a starting point derived from what the node runs now, stated with its
rule so a reviewer can change it; none is a standard.
"""

from __future__ import annotations

import math
from collections import defaultdict
from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from bot.core.model.cluster import ClusterView
from bot.core.model.quantity import QuantityError, parse_quantity

GiB = 1024**3
MiB = 1024**2
GPU_RESOURCE = "nvidia.com/gpu"
#: quota headroom over what the namespace requests on this node today
QUOTA_HEADROOM = 1.25


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class NamespaceQuota(_Model):
    namespace: str
    pods: int
    gpu_pods: int
    gpu_requests: int = Field(description="nvidia.com/gpu requested by its pods on this node")
    memory_requests_bytes: int
    memory_limits_bytes: int | None = Field(description="None when a pod is unbounded")
    quota_gpu: int
    quota_memory_requests: str
    quota_memory_limits: str


class KubeletSettings(_Model):
    capacity_memory_bytes: int
    kube_reserved_memory: str
    system_reserved_memory: str
    eviction_hard_memory: str
    eviction_soft_memory: str
    eviction_soft_grace: str = "1m30s"
    eviction_max_pod_grace_s: int = 60


class LimitRangeDefaults(_Model):
    default_request_memory: str
    default_limit_memory: str
    median_request_bytes: int | None = Field(
        None, description="median memory request of the node's pods; None: no pod requests any"
    )
    pods_with_requests: int = Field(0, description="pods the median is taken over")


class KitSource(_Model):
    """Where the kit's numbers were read (so a reader knows how fresh they are): the cluster
    view stored with an incident's latest diagnosis (``snapshot``), or the node as read from
    the API server just now (``live``). ``at`` is passed in: the core reads no clock."""

    kind: Literal["snapshot", "live"]
    at: datetime | None = None
    incident: str | None = None


class PreventionParams(_Model):
    node: str
    gpu_product: str | None
    node_gpus: int
    namespaces: list[NamespaceQuota]
    kubelet: KubeletSettings
    limit_range: LimitRangeDefaults
    slab_alert_ratio: float = 0.3
    available_alert_ratio: float = 0.05
    #: LowNodeUtilization percentages of allocatable (by requests): the descheduler
    #: README's example values, a starting point rather than anything measured here
    descheduler_thresholds: dict[str, int] = Field(
        default_factory=lambda: {"cpu": 20, "memory": 40, "pods": 20}
    )
    descheduler_targets: dict[str, int] = Field(
        default_factory=lambda: {"cpu": 60, "memory": 70, "pods": 60}
    )


def _bytes(text: str | None) -> int:
    if not text:
        return 0
    try:
        return int(parse_quantity(text).as_float())
    except QuantityError:
        return 0


def gibibytes(n: int | float) -> str:
    """Round up to a whole ``Gi`` quantity (quota values people read and edit)."""
    return f"{max(1, math.ceil(n / GiB))}Gi"


def mebibytes(n: int | float) -> str:
    return f"{max(1, math.ceil(n / MiB))}Mi"


def kube_reserved_bytes(capacity: int) -> int:
    """Tiered memory reservation (the widely used GKE rule): 25% of the first 4 GiB, 20% of
    the next 4, 10% of the next 8, 6% of the next 112, 2% above 128 GiB."""
    tiers = ((4 * GiB, 0.25), (4 * GiB, 0.20), (8 * GiB, 0.10), (112 * GiB, 0.06))
    left, total = capacity, 0.0
    for size, share in tiers:
        part = min(left, size)
        total += part * share
        left -= part
    total += max(0, left) * 0.02
    return int(total)


def kubelet_settings(capacity: int) -> KubeletSettings:
    # hard eviction at 1% of RAM (at least the 100Mi default); soft at twice that, so the
    # soft threshold (graceful, ranked eviction) fires well before the hard one
    hard = max(100 * MiB, capacity // 100)
    return KubeletSettings(
        capacity_memory_bytes=capacity,
        kube_reserved_memory=mebibytes(kube_reserved_bytes(capacity)),
        # sshd, journald, containerd's own memory: 1 GiB plus 0.5% of RAM
        system_reserved_memory=mebibytes(GiB + capacity // 200),
        eviction_hard_memory=mebibytes(hard),
        eviction_soft_memory=mebibytes(2 * hard),
    )


def prevention_params(view: ClusterView) -> PreventionParams:
    """Quota per namespace with GPU pods on the node (GPU: what they request now, as the
    quota; memory: requests and limits with ``QUOTA_HEADROOM``), kubelet reservations from
    the node's capacity, LimitRange defaults from the median non-GPU pod."""
    by_ns: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0, 0, 0])
    unbounded: set[str] = set()
    for pod in view.pods:
        row = by_ns[pod.namespace]
        row[0] += 1
        row[1] += 1 if pod.gpu_request > 0 else 0
        row[2] += pod.gpu_request
        row[3] += pod.memory_request_bytes
        if pod.memory_limit_bytes is None:
            unbounded.add(pod.namespace)
        else:
            row[4] += pod.memory_limit_bytes
    quotas = []
    for ns in sorted(by_ns):
        pods, gpu_pods, gpus, req, lim = by_ns[ns]
        if gpu_pods == 0:
            continue
        lim_known = None if ns in unbounded else lim
        quotas.append(
            NamespaceQuota(
                namespace=ns,
                pods=pods,
                gpu_pods=gpu_pods,
                gpu_requests=gpus,
                memory_requests_bytes=req,
                memory_limits_bytes=lim_known,
                quota_gpu=gpus,
                quota_memory_requests=gibibytes(req * QUOTA_HEADROOM),
                quota_memory_limits=gibibytes(max(lim, req) * QUOTA_HEADROOM),
            )
        )
    capacity = _bytes(view.node.capacity.get("memory")) or _bytes(
        view.node.allocatable.get("memory")
    )
    requests = sorted(p.memory_request_bytes for p in view.pods if p.memory_request_bytes > 0)
    median = requests[len(requests) // 2] if requests else 2 * GiB
    return PreventionParams(
        node=view.node.name,
        gpu_product=view.node.gpu_product,
        node_gpus=int(_bytes(view.node.capacity.get(GPU_RESOURCE))),
        namespaces=quotas,
        kubelet=kubelet_settings(capacity),
        limit_range=LimitRangeDefaults(
            default_request_memory=gibibytes(median),
            default_limit_memory=gibibytes(median * 2),
            median_request_bytes=requests[len(requests) // 2] if requests else None,
            pods_with_requests=len(requests),
        ),
    )
