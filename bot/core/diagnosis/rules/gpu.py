"""GPU rules: isolation, device memory, GPU processes outside pods.

Codes:

- ``GPU_ISOLATION_HOLDS`` (ok) / ``GPU_ISOLATION_BROKEN`` (critical): every container's
  ``nvidia.com/gpu`` request equals its limit and the node's GPU requests do not exceed
  allocatable (params ``requested``/``allocatable``: the domain's "8 of 8").
- ``GPU_SHARED`` (warning) instead of ``GPU_ISOLATION_HOLDS`` where the device plugin shares
  GPUs (time-slicing or MPS, ``bot.core.diagnosis.gpus.gpu_sharing``): replicas of one physical GPU
  share its memory with no isolation, so "isolation holds" is never said there (params
  ``strategy``, ``replicas``, ``physical``, ``requested``, ``allocatable``).
- ``GPU_SHARED_CRASH_LOOP`` (critical): on a shared GPU, pods whose processes use that
  physical GPU keep restarting (restart count > 0, last state not Completed) while another
  pod holds more than an equal share of its memory: CUDA out of memory, most likely (params
  ``gpu_index``, ``gpu_uuid``, ``pods``, ``count``, ``restarts``, ``last_reason``,
  ``holder``, ``holder_bytes``, ``total_bytes``, ``fair_share_bytes``).
- ``GPU_MEMORY_OK`` (ok): every GPU is under ``gpu_memory_warn_ratio``; params give the node
  totals and the fullest GPU.
- ``GPU_MEMORY_HIGH`` (warning) / ``GPU_MEMORY_EXHAUSTED`` (critical): one per GPU at or
  above ``gpu_memory_warn_ratio`` / ``gpu_memory_exhausted_ratio`` (NVML used / total).
- ``GPU_PROCESS_NO_POD`` (warning): a process NVML reports on a GPU that maps to no pod.
- ``GPU_NOT_VERIFIED`` (info): the node is a GPU node (``NodeInfo.has_gpus``: whole GPUs,
  MIG slices, shared GPUs, AMD, DRA slices) but NVML gave no devices.
"""

from __future__ import annotations

from bot.core.diagnosis.attribution import norm_uid
from bot.core.diagnosis.consumers import GpuHolder, gpu_holders
from bot.core.diagnosis.findings import Fact, Finding
from bot.core.diagnosis.gpus import gpu_sharing
from bot.core.diagnosis.rules.context import (
    ALLOCATABLE,
    ALLOCATED,
    GPU_RESOURCE,
    Context,
    fact,
    pod_source,
    ratio,
)
from bot.core.model.cluster import PodInfo
from bot.core.model.evidence import GpuDevice
from bot.core.model.quantity import quantity_value
from bot.core.model.thresholds import Thresholds


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
    sharing = gpu_sharing(ctx.view.node)
    shared: dict[str, str | int | float] = {}
    if sharing.shared:
        physical = len(ctx.bundle.gpus) or (allocatable or 0) // max(1, sharing.replicas)
        shared = {"strategy": sharing.strategy, "replicas": sharing.replicas, "physical": physical}
        facts.append(
            fact(
                "node.gpu_replicas",
                "pods per physical GPU",
                sharing.replicas,
                "count",
                sharing.source,
            )
        )
    code = "GPU_ISOLATION_BROKEN" if broken else "GPU_SHARED" if shared else "GPU_ISOLATION_HOLDS"
    return [
        Finding(
            code=code,
            severity="critical" if broken else "warning" if shared else "ok",
            subject=ctx.node,
            facts=facts,
            params={
                "requested": requested,
                "limits": limits,
                "allocatable": allocatable if allocatable is not None else -1,
                "mismatched": ", ".join(mismatched),
                "oversubscribed": int(oversubscribed),
                **shared,
            },
        )
    ]


def restarting(pod: PodInfo) -> tuple[int, str]:
    """(restarts, last termination reason) of a pod's containers that keep failing: restart
    count > 0 and a last state other than Completed; (0, "") when none does."""
    restarts, reason = 0, ""
    for c in pod.containers:
        if c.restart_count > 0 and (c.last_termination_reason or "") != "Completed":
            restarts += c.restart_count
            reason = reason or (c.last_termination_reason or "unknown")
    return restarts, reason


def shared_gpu_crash_loops(ctx: Context) -> list[tuple[GpuDevice, GpuHolder, list[PodInfo]]]:
    """On a node whose GPUs are shared: per physical GPU whose top holder is a pod holding
    more than an equal share (total / replicas), the other pods on that GPU that keep
    restarting. Pods are placed on a GPU by their processes in NVML."""
    sharing = gpu_sharing(ctx.view.node if ctx.view is not None else None)
    if not sharing.shared:
        return []
    out: list[tuple[GpuDevice, GpuHolder, list[PodInfo]]] = []
    for index, held in gpu_holders(ctx.bundle, ctx.attr).items():
        top = held[0]
        if top.pod is None or top.bytes * sharing.replicas <= top.gpu.memory_total_bytes:
            continue
        looping: list[PodInfo] = []
        for uid, procs in ctx.attr.gpu_processes_by_pod.items():
            usage = ctx.attr.pods.get(norm_uid(uid) or "") or ctx.attr.pods.get(uid)
            pod = usage.pod if usage is not None else None
            if pod is None or pod.key == top.pod or not any(p.gpu_index == index for p in procs):
                continue
            if restarting(pod)[0] > 0:
                looping.append(pod)
        if looping:
            out.append((top.gpu, top, sorted(looping, key=lambda p: p.key)))
    return out


def shared_gpu_params(ctx: Context, g: GpuDevice) -> dict[str, str | int | float]:
    """On a shared GPU: how it is shared, an equal share of it, and the pods on it that keep
    restarting (``bot.core.diagnosis.rules.gpu.shared_gpu_crash_loops``)."""
    sharing = gpu_sharing(ctx.view.node if ctx.view is not None else None)
    if not sharing.shared:
        return {}
    params: dict[str, str | int | float] = {
        "sharing": sharing.strategy,
        "replicas": sharing.replicas,
        "fair_share_bytes": g.memory_total_bytes // max(1, sharing.replicas),
    }
    for gpu, _, looping in shared_gpu_crash_loops(ctx):
        if gpu.index != g.index:
            continue
        counts = [restarting(p) for p in looping]
        params.update(
            crash_pods=", ".join(p.key for p in looping),
            crash_count=len(looping),
            crash_restarts=sum(n for n, _ in counts),
            crash_reason=counts[0][1],
        )
    return params


def gpu_shared_crash_loop(ctx: Context, t: Thresholds) -> list[Finding]:
    out: list[Finding] = []
    sharing = gpu_sharing(ctx.view.node if ctx.view is not None else None)
    for g, top, looping in shared_gpu_crash_loops(ctx):
        src = f"nvml:{g.uuid}"
        counts = [restarting(p) for p in looping]
        facts = [
            fact("gpu_process.used_bytes", f"{top.pod} on GPU {g.index}", top.bytes, "bytes", src),
            fact(
                "gpu.memory_total_bytes", f"GPU {g.index} total", g.memory_total_bytes, "bytes", src
            ),
        ] + [
            fact("container.restart_count", f"{p.key} restarts", n, "count", pod_source(p))
            for p, (n, _) in zip(looping, counts, strict=True)
        ]
        out.append(
            Finding(
                code="GPU_SHARED_CRASH_LOOP",
                severity="critical",
                subject=g.uuid,
                facts=facts,
                params={
                    "gpu_index": g.index,
                    "gpu_uuid": g.uuid,
                    "pods": ", ".join(p.key for p in looping),
                    "count": len(looping),
                    "restarts": sum(n for n, _ in counts),
                    "last_reason": counts[0][1],
                    "holder": top.pod or "",
                    "holder_bytes": top.bytes,
                    "total_bytes": g.memory_total_bytes,
                    "fair_share_bytes": g.memory_total_bytes // max(1, sharing.replicas),
                    "strategy": sharing.strategy,
                    "replicas": sharing.replicas,
                },
            )
        )
    return out


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
    summary = [g for g in ctx.bundle.gaps if g.source == "gpu:evidence"]
    gaps = summary or [g for g in ctx.bundle.gaps if g.source.startswith("nvml")]
    reasons = [g.reason for g in gaps]
    devices = sum(ctx.view.node.gpu_resources.values()) or len(ctx.view.node.gpu_dra_drivers)
    # one gap with a code: its code and params too (``gap_<name>``), for the reader's words
    said: dict[str, str | int | float] = {}
    if len(gaps) == 1 and gaps[0].code:
        said["gap_code"] = gaps[0].code
        for k, v in gaps[0].params.items():
            said[f"gap_{k}"] = ", ".join(map(str, v)) if isinstance(v, list) else v
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
            params={"reason": "; ".join(reasons) or "no GPU devices reported", **said},
        )
    ]


RULES = (
    gpu_isolation,
    gpu_memory,
    gpu_process_no_pod,
    gpu_not_verified,
    gpu_shared_crash_loop,
)
