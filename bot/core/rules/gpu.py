"""GPU rules: isolation, device memory, GPU processes outside pods.

Codes:

- ``GPU_ISOLATION_HOLDS`` (ok) / ``GPU_ISOLATION_BROKEN`` (critical): every container's
  ``nvidia.com/gpu`` request equals its limit and the node's GPU requests do not exceed
  allocatable (params ``requested``/``allocatable``: the domain's "8 of 8").
- ``GPU_MEMORY_OK`` (ok): every GPU is under ``gpu_memory_warn_ratio``; params give the node
  totals and the fullest GPU.
- ``GPU_MEMORY_HIGH`` (warning) / ``GPU_MEMORY_EXHAUSTED`` (critical): one per GPU at or
  above ``gpu_memory_warn_ratio`` / ``gpu_memory_exhausted_ratio`` (NVML used / total).
- ``GPU_PROCESS_NO_POD`` (warning): a process NVML reports on a GPU that maps to no pod.
- ``GPU_NOT_VERIFIED`` (info): the node is a GPU node (``NodeInfo.has_gpus``: whole GPUs,
  MIG slices, shared GPUs, AMD, DRA slices) but NVML gave no devices.
"""

from __future__ import annotations

from bot.core.findings import Fact, Finding
from bot.core.quantity import quantity_value
from bot.core.rules.context import (
    ALLOCATABLE,
    ALLOCATED,
    GPU_RESOURCE,
    Context,
    fact,
    pod_source,
    ratio,
)
from bot.core.thresholds import Thresholds


def gpu_isolation(ctx: Context, t: Thresholds) -> list[Finding]:
    if ctx.view is None:
        return []
    gpu_pods = [p for p in ctx.view.pods if p.gpu_request > 0]
    row = ctx.allocated(GPU_RESOURCE)
    allocatable = ctx.gpu_allocatable
    if not gpu_pods and not allocatable:
        return []
    mismatched: list[str] = []
    facts: list[Fact] = []
    for pod in sorted(gpu_pods, key=lambda p: p.key):
        for c in pod.containers:
            req = quantity_value(c.requests.get(GPU_RESOURCE))
            lim = quantity_value(c.limits.get(GPU_RESOURCE))
            if req is None and lim is None:
                continue
            if req != lim:
                mismatched.append(f"{pod.key}/{c.name}")
            facts.append(
                fact(
                    "container.gpu_request",
                    f"{pod.key}/{c.name} GPUs",
                    req,
                    "count",
                    pod_source(pod),
                )
            )
    requested = int(row.requests_value) if row is not None else sum(p.gpu_request for p in gpu_pods)
    limits = int(row.limits_value) if row is not None else requested
    src = ALLOCATED if row is not None else "k8s:pods"
    facts[:0] = [
        fact("node.gpu_requests", "GPU requests", requested, "count", src),
        fact("node.gpu_limits", "GPU limits", limits, "count", src),
        fact("node.gpu_allocatable", "GPUs allocatable", allocatable, "count", ALLOCATABLE),
    ]
    oversubscribed = allocatable is not None and requested > allocatable
    broken = bool(mismatched) or oversubscribed or requested != limits
    return [
        Finding(
            code="GPU_ISOLATION_BROKEN" if broken else "GPU_ISOLATION_HOLDS",
            severity="critical" if broken else "ok",
            subject=ctx.node,
            facts=facts,
            params={
                "requested": requested,
                "limits": limits,
                "allocatable": allocatable if allocatable is not None else -1,
                "mismatched": ", ".join(mismatched),
                "oversubscribed": int(oversubscribed),
            },
        )
    ]


def gpu_memory(ctx: Context, t: Thresholds) -> list[Finding]:
    gpus = sorted(ctx.bundle.gpus, key=lambda g: g.index)
    if not gpus:
        return []
    out: list[Finding] = []
    for g in gpus:
        share = ratio(g.memory_used_bytes, g.memory_total_bytes)
        if share is None or share < t.gpu_memory_warn_ratio:
            continue
        exhausted = share >= t.gpu_memory_exhausted_ratio
        src = f"nvml:{g.uuid}"
        out.append(
            Finding(
                code="GPU_MEMORY_EXHAUSTED" if exhausted else "GPU_MEMORY_HIGH",
                severity="critical" if exhausted else "warning",
                subject=g.uuid,
                facts=[
                    fact(
                        "gpu.memory_used_bytes",
                        f"GPU {g.index} used",
                        g.memory_used_bytes,
                        "bytes",
                        src,
                    ),
                    fact(
                        "gpu.memory_total_bytes",
                        f"GPU {g.index} total",
                        g.memory_total_bytes,
                        "bytes",
                        src,
                    ),
                    fact("gpu.memory_ratio", f"GPU {g.index} used / total", share, "ratio", src),
                ],
                params={
                    "gpu_index": g.index,
                    "gpu_uuid": g.uuid,
                    "used_bytes": g.memory_used_bytes,
                    "total_bytes": g.memory_total_bytes,
                    "percent": round(share * 100, 1),
                },
            )
        )
    if out:
        return out
    worst = max(
        gpus, key=lambda g: (ratio(g.memory_used_bytes, g.memory_total_bytes) or 0, -g.index)
    )
    used = sum(g.memory_used_bytes for g in gpus)
    total = sum(g.memory_total_bytes for g in gpus)
    worst_ratio = ratio(worst.memory_used_bytes, worst.memory_total_bytes) or 0.0
    src = f"nvml:{worst.uuid}"
    return [
        Finding(
            code="GPU_MEMORY_OK",
            severity="ok",
            subject=ctx.node,
            facts=[
                fact("gpu.count", "GPUs", len(gpus), "count", "nvml"),
                fact("gpu.memory_used_total_bytes", "GPU memory used (all)", used, "bytes", "nvml"),
                fact("gpu.memory_total_total_bytes", "GPU memory (all)", total, "bytes", "nvml"),
                fact(
                    "gpu.max_memory_used_bytes",
                    "fullest GPU used",
                    worst.memory_used_bytes,
                    "bytes",
                    src,
                ),
                fact(
                    "gpu.max_memory_total_bytes",
                    "fullest GPU total",
                    worst.memory_total_bytes,
                    "bytes",
                    src,
                ),
            ],
            params={
                "gpu_count": len(gpus),
                "used_bytes": used,
                "total_bytes": total,
                "max_used_bytes": worst.memory_used_bytes,
                "max_total_bytes": worst.memory_total_bytes,
                "max_percent": round(worst_ratio * 100, 1),
            },
        )
    ]


def gpu_process_no_pod(ctx: Context, t: Thresholds) -> list[Finding]:
    out: list[Finding] = []
    for gp in sorted(ctx.attr.unmapped_gpu_processes, key=lambda p: (p.gpu_index, p.pid)):
        src = f"nvml:{gp.gpu_uuid}"
        out.append(
            Finding(
                code="GPU_PROCESS_NO_POD",
                severity="warning",
                subject=gp.gpu_uuid,
                facts=[
                    fact("gpu_process.pid", "PID", gp.pid, "count", src),
                    fact(
                        "gpu_process.used_bytes",
                        "GPU memory",
                        gp.used_gpu_memory_bytes,
                        "bytes",
                        src,
                    ),
                ],
                params={
                    "pid": gp.pid,
                    "command": gp.command or "",
                    "gpu_index": gp.gpu_index,
                    "used_bytes": gp.used_gpu_memory_bytes
                    if gp.used_gpu_memory_bytes is not None
                    else -1,
                },
            )
        )
    return out


def gpu_not_verified(ctx: Context, t: Thresholds) -> list[Finding]:
    if ctx.bundle.gpus or not ctx.is_gpu_node or ctx.view is None:
        return []
    # the gateway's summary (what was tried, in the install's words) says it all when present
    summary = [g.reason for g in ctx.bundle.gaps if g.source == "gpu:evidence"]
    reasons = summary or [g.reason for g in ctx.bundle.gaps if g.source.startswith("nvml")]
    devices = sum(ctx.view.node.gpu_resources.values()) or len(ctx.view.node.gpu_dra_drivers)
    return [
        Finding(
            code="GPU_NOT_VERIFIED",
            severity="info",
            subject=ctx.node,
            facts=[
                fact(
                    "node.gpu_allocatable",
                    "GPUs allocatable",
                    ctx.gpu_allocatable if ctx.gpu_allocatable else devices,
                    "count",
                    ALLOCATABLE,
                )
            ],
            params={"reason": "; ".join(reasons) or "no GPU devices reported"},
        )
    ]


RULES = (gpu_isolation, gpu_memory, gpu_process_no_pod, gpu_not_verified)
