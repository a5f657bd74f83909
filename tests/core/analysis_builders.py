"""Small builders for rule tests: a context from a few numbers (GiB unless noted)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from bot.core.diagnosis.attribution import attribute
from bot.core.diagnosis.rules.context import Context
from bot.core.model.cluster import (
    ClusterView,
    ContainerInfo,
    NodeInfo,
    OwnerRef,
    PodInfo,
    ResourceAllocation,
)
from bot.core.model.evidence import ContainerMemory, EvidenceBundle, GpuDevice, MemInfo

GI = 1024**3
AT = datetime(2026, 1, 1, tzinfo=UTC)


def meminfo(total: float = 256, **gib: float) -> MemInfo:
    fields: dict[str, Any] = {
        "mem_total_bytes": int(total * GI),
        "mem_free_bytes": int(gib.pop("free", 10) * GI),
    }
    fields.update({f"{k}_bytes": int(v * GI) for k, v in gib.items()})
    return MemInfo(**fields)


def pod(
    name: str,
    *,
    gpu: int = 0,
    req: float = 1,
    lim: float | None = 2,
    priority: int = 0,
    owner: str | None = "Deployment",
    qos: str = "burstable",
    **extra: Any,
) -> PodInfo:
    lims = {"memory": f"{int(lim * 1024)}Mi"} if lim else {}
    reqs = {"memory": f"{int(req * 1024)}Mi"} if req else {}
    if gpu:
        lims["nvidia.com/gpu"] = reqs["nvidia.com/gpu"] = str(gpu)
    return PodInfo(
        namespace="ml",
        name=name,
        uid=f"uid-{name}",
        qos_class=qos,
        priority=priority,  # type: ignore[arg-type]
        owners=[OwnerRef(kind=owner, name=f"{name}-ctl")] if owner else [],
        containers=[
            ContainerInfo(
                name="main",
                container_id=(name * 64)[:64].ljust(64, "0"),
                requests=reqs,
                limits=lims,
            )
        ],
        memory_request_bytes=int(req * GI),
        memory_limit_bytes=int(lim * GI) if lim else None,
        gpu_request=gpu,
        **extra,
    )


def cgroup(p: PodInfo, ws: float, limit: float | None = None, **extra: Any) -> ContainerMemory:
    return ContainerMemory(
        cgroup_path=f"kubepods/pod{p.uid}/{p.containers[0].container_id}",
        pod_uid=p.uid,
        container_id=p.containers[0].container_id,
        working_set_bytes=int(ws * GI),
        anon_bytes=int(ws * GI),
        file_bytes=0,
        inactive_file_bytes=0,
        limit_bytes=int(limit * GI) if limit else None,
        **extra,
    )


def gpu(index: int, used: float, total: float = 80) -> GpuDevice:
    return GpuDevice(
        index=index,
        uuid=f"GPU-{index}",
        name="H100",
        memory_total_bytes=int(total * GI),
        memory_used_bytes=int(used * GI),
        memory_free_bytes=int((total - used) * GI),
    )


def memory_row(req_pct: int, lim_pct: int, alloc: float = 100) -> ResourceAllocation:
    return ResourceAllocation(
        resource="memory",
        requests=f"{req_pct}Gi",
        limits=f"{lim_pct}Gi",
        requests_value=req_pct * alloc / 100 * GI,
        limits_value=lim_pct * alloc / 100 * GI,
        allocatable_value=alloc * GI,
        requests_percent=req_pct,
        limits_percent=lim_pct,
    )


def bundle(**fields: Any) -> EvidenceBundle:
    return EvidenceBundle(collector_version="t", hostname="n1", collected_at=AT, **fields)


def view(pods: list[PodInfo] = (), **fields: Any) -> ClusterView:  # type: ignore[assignment]
    node = fields.pop(
        "node", NodeInfo(name="n1", allocatable={"memory": "100Gi", "nvidia.com/gpu": "8"})
    )
    return ClusterView(node=node, pods=list(pods), **fields)


def context(b: EvidenceBundle, v: ClusterView | None = None) -> Context:
    return Context(bundle=b, view=v, attr=attribute(b, v), node="n1", now=AT)
