"""Host-level rules: page cache, available memory, PSI, allocation, non-GPU workloads.

Codes:

- ``PAGE_CACHE_SQUEEZED``: buff/cache (Buffers + Cached + SReclaimable) under
  ``page_cache_low_share`` of MemTotal while MemAvailable is under
  ``page_cache_squeeze_available_share`` (or unknown): a small cache only means pressure
  when memory is short.
- ``MEMORY_AVAILABLE_LOW``: MemAvailable under ``available_low_share`` (critical under
  ``available_critical_share``).
- ``MEMORY_PRESSURE_STALL``: PSI memory some/full avg10 above thresholds.
- ``LIMITS_OVERCOMMITTED``: memory limits total >= ``limits_overcommit_warn_percent`` of
  allocatable (kubectl's own truncated percentages from ``view.allocated``), with requests.
- ``HOST_MEM_NON_GPU_WORKLOAD``: a pod that requests no GPU holds at least
  ``non_gpu_workload_share`` of MemTotal (the domain's preprocessing pod).
"""

from __future__ import annotations

from bot.core.diagnosis.findings import Finding
from bot.core.diagnosis.rules.context import (
    ALLOCATABLE,
    ALLOCATED,
    MEMINFO,
    PSI,
    Context,
    controller_of,
    fact,
    pod_source,
    ratio,
)
from bot.core.model.thresholds import Thresholds


def buff_cache_bytes(ctx: Context) -> int | None:
    mi = ctx.bundle.meminfo
    if mi is not None:
        return mi.buffers_bytes + mi.cached_bytes + (mi.s_reclaimable_bytes or 0)
    return ctx.bundle.free.buff_cache_bytes if ctx.bundle.free is not None else None


def available_bytes(ctx: Context) -> int | None:
    mi = ctx.bundle.meminfo
    if mi is not None and mi.mem_available_bytes is not None:
        return mi.mem_available_bytes
    return ctx.bundle.free.available_bytes if ctx.bundle.free is not None else None


def under_pressure(ctx: Context, t: Thresholds) -> bool:
    """The node as a whole is short of memory (available low, or PSI stalls)."""
    share = ratio(available_bytes(ctx) or 0, ctx.mem_total)
    if available_bytes(ctx) is not None and share is not None and share < t.available_low_share:
        return True
    psi = ctx.bundle.pressure
    if psi is None:
        return False
    full = psi.full.avg10 if psi.full is not None else 0.0
    return psi.some.avg10 >= t.psi_some_avg10_warn or full >= t.psi_full_avg10_critical


def page_cache_squeezed(ctx: Context, t: Thresholds) -> list[Finding]:
    cache, total = buff_cache_bytes(ctx), ctx.mem_total
    share = ratio(cache or 0, total)
    if cache is None or share is None or share >= t.page_cache_low_share:
        return []
    avail = available_bytes(ctx)
    avail_share = ratio(avail or 0, total) if avail is not None else None
    if avail_share is not None and avail_share >= t.page_cache_squeeze_available_share:
        return []
    facts = [
        fact("node.buff_cache_bytes", "buff/cache", cache, "bytes", MEMINFO),
        fact("node.mem_total_bytes", "MemTotal", total, "bytes", MEMINFO),
        fact("node.buff_cache_share", "buff/cache share", share, "ratio", MEMINFO),
    ]
    if avail is not None:
        facts.append(fact("node.mem_available_bytes", "MemAvailable", avail, "bytes", MEMINFO))
    return [
        Finding(
            code="PAGE_CACHE_SQUEEZED",
            severity="warning",
            subject=ctx.node,
            facts=facts,
            params={
                "buff_cache_bytes": cache,
                "available_bytes": avail if avail is not None else -1,
                "mem_total_bytes": total or 0,
                "share_percent": round(share * 100, 1),
            },
        )
    ]


def memory_available_low(ctx: Context, t: Thresholds) -> list[Finding]:
    avail, total = available_bytes(ctx), ctx.mem_total
    share = ratio(avail or 0, total)
    if avail is None or share is None or share >= t.available_low_share:
        return []
    return [
        Finding(
            code="MEMORY_AVAILABLE_LOW",
            severity="critical" if share < t.available_critical_share else "warning",
            subject=ctx.node,
            facts=[
                fact("node.mem_available_bytes", "MemAvailable", avail, "bytes", MEMINFO),
                fact("node.mem_total_bytes", "MemTotal", total, "bytes", MEMINFO),
                fact("node.available_share", "available share", share, "ratio", MEMINFO),
            ],
            params={
                "available_bytes": avail,
                "mem_total_bytes": total or 0,
                "share_percent": round(share * 100, 1),
            },
        )
    ]


def memory_pressure_stall(ctx: Context, t: Thresholds) -> list[Finding]:
    psi = ctx.bundle.pressure
    if psi is None:
        return []
    full10 = psi.full.avg10 if psi.full is not None else None
    critical = full10 is not None and full10 >= t.psi_full_avg10_critical
    if not critical and psi.some.avg10 < t.psi_some_avg10_warn:
        return []
    facts = [
        fact("psi.some_avg10", "PSI some avg10", psi.some.avg10, "percent", PSI),
        fact("psi.some_avg60", "PSI some avg60", psi.some.avg60, "percent", PSI),
    ]
    if psi.full is not None:
        facts.append(fact("psi.full_avg10", "PSI full avg10", psi.full.avg10, "percent", PSI))
        facts.append(fact("psi.full_avg60", "PSI full avg60", psi.full.avg60, "percent", PSI))
    return [
        Finding(
            code="MEMORY_PRESSURE_STALL",
            severity="critical" if critical else "warning",
            subject=ctx.node,
            facts=facts,
            params={
                "some_avg10": psi.some.avg10,
                "some_avg60": psi.some.avg60,
                "full_avg10": full10 if full10 is not None else -1.0,
            },
        )
    ]


def limits_overcommitted(ctx: Context, t: Thresholds) -> list[Finding]:
    row = ctx.allocated("memory")
    if row is None or row.limits_percent is None:
        return []
    if row.limits_percent < t.limits_overcommit_warn_percent:
        return []
    critical = row.limits_percent >= t.limits_overcommit_critical_percent
    req_pct = row.requests_percent
    facts = [
        fact("node.memory_limits_bytes", "memory limits", row.limits_value, "bytes", ALLOCATED),
        fact("node.memory_limits_percent", "limits %", row.limits_percent, "percent", ALLOCATED),
        fact(
            "node.memory_requests_bytes", "memory requests", row.requests_value, "bytes", ALLOCATED
        ),
        fact("node.memory_requests_percent", "requests %", req_pct, "percent", ALLOCATED),
        fact(
            "node.memory_allocatable_bytes",
            "allocatable",
            row.allocatable_value,
            "bytes",
            ALLOCATABLE,
        ),
    ]
    return [
        Finding(
            code="LIMITS_OVERCOMMITTED",
            severity="critical" if critical else "warning",
            subject=ctx.node,
            facts=facts,
            params={
                "limits": row.limits,
                "requests": row.requests,
                "limits_percent": row.limits_percent,
                "requests_percent": req_pct if req_pct is not None else -1,
                "allocatable_bytes": int(row.allocatable_value or 0),
            },
        )
    ]


def host_mem_non_gpu_workload(ctx: Context, t: Thresholds) -> list[Finding]:
    """A workload without GPUs holding a large share of a GPU node's host RAM (on a node
    without GPUs every pod is one: nothing to say)."""
    total = ctx.mem_total
    if not total or not ctx.is_gpu_node:
        return []
    ranked = ctx.ranked_pods()
    biggest = ranked[0].uid if ranked else None
    pressured = under_pressure(ctx, t)
    out: list[Finding] = []
    for rank, usage in enumerate(ranked, start=1):
        ws = usage.working_set_bytes or 0
        pod = usage.pod
        if pod is None or pod.accelerated or ctx.attr.gpu_processes_by_pod.get(usage.uid):
            continue
        if ws < t.min_consumer_bytes or ws < t.non_gpu_workload_share * total:
            continue
        top = max(usage.containers, key=lambda c: c.mem.working_set_bytes or 0, default=None)
        limit = top.mem.limit_bytes if top is not None else pod.memory_limit_bytes
        top_ws = (top.mem.working_set_bytes or 0) if top is not None else ws
        near = bool(limit) and top_ws >= t.container_near_limit_ratio * (limit or 0)
        share = ratio(ws, total) or 0.0
        facts = [
            fact("pod.working_set_bytes", "working set", ws, "bytes", usage.source),
            fact("node.mem_total_bytes", "MemTotal", total, "bytes", MEMINFO),
            fact("pod.host_memory_share", "share of host memory", share, "ratio", usage.source),
            fact("pod.gpu_request", "GPUs requested", 0, "count", pod_source(pod)),
        ]
        if limit:
            facts.append(
                fact("container.limit_bytes", "memory limit", limit, "bytes", usage.source)
            )
        out.append(
            Finding(
                code="HOST_MEM_NON_GPU_WORKLOAD",
                severity="critical" if near or pressured else "warning",
                subject=pod.key,
                facts=facts,
                params={
                    "pod": pod.key,
                    "controller": controller_of(pod) or "",
                    "container": top.name if top is not None else "",
                    "working_set_bytes": ws,
                    "container_working_set_bytes": top_ws,
                    "limit_bytes": limit or 0,
                    "share_percent": round(share * 100, 1),
                    "rank": rank,
                    "biggest_consumer": int(usage.uid == biggest),
                    "near_limit": int(near),
                },
            )
        )
    return out


RULES = (
    page_cache_squeezed,
    memory_available_low,
    memory_pressure_stall,
    limits_overcommitted,
    host_mem_non_gpu_workload,
)
