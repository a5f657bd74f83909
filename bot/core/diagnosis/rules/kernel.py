"""Kernel rules: unreclaimable slab and socket buffers.

Both are kernel memory, which is NOT part of the node working set the kubelet's
``memory.available`` eviction signal uses (reference/kubernetes.md §4): a leak here leads to
a kernel OOM without any eviction. Every finding says so with ``eviction_blind=1``.

Codes:

- ``KERNEL_SLAB_UNRECLAIMABLE_HIGH``: SUnreclaim / MemTotal >= ``slab_unreclaim_warn_share``
  (critical at ``slab_unreclaim_critical_share``).
- ``SOCKET_MEMORY_HIGH``: socket buffers (``/proc/net/sockstat``) >=
  ``socket_memory_warn_share`` of MemTotal.
"""

from __future__ import annotations

from bot.core.diagnosis.findings import Finding
from bot.core.diagnosis.rules.context import MEMINFO, SOCKSTAT, Context, fact, ratio
from bot.core.model.thresholds import Thresholds


def slab_unreclaimable_high(ctx: Context, t: Thresholds) -> list[Finding]:
    mi = ctx.bundle.meminfo
    if mi is None or mi.s_unreclaim_bytes is None:
        return []
    share = ratio(mi.s_unreclaim_bytes, ctx.mem_total)
    if share is None or share < t.slab_unreclaim_warn_share:
        return []
    facts = [
        fact("kernel.s_unreclaim_bytes", "SUnreclaim", mi.s_unreclaim_bytes, "bytes", MEMINFO),
        fact("node.mem_total_bytes", "MemTotal", mi.mem_total_bytes, "bytes", MEMINFO),
        fact("kernel.s_unreclaim_share", "SUnreclaim share", share, "ratio", MEMINFO),
    ]
    if mi.slab_bytes is not None:
        facts.append(fact("kernel.slab_bytes", "Slab", mi.slab_bytes, "bytes", MEMINFO))
    if mi.s_reclaimable_bytes is not None:
        facts.append(
            fact(
                "kernel.s_reclaimable_bytes",
                "SReclaimable",
                mi.s_reclaimable_bytes,
                "bytes",
                MEMINFO,
            )
        )
    return [
        Finding(
            code="KERNEL_SLAB_UNRECLAIMABLE_HIGH",
            severity="critical" if share >= t.slab_unreclaim_critical_share else "warning",
            subject=ctx.node,
            facts=facts,
            params={
                "s_unreclaim_bytes": mi.s_unreclaim_bytes,
                "share_percent": round(share * 100, 1),
                "mem_total_bytes": mi.mem_total_bytes,
                "eviction_blind": 1,
            },
        )
    ]


def socket_memory_high(ctx: Context, t: Thresholds) -> list[Finding]:
    sock = ctx.bundle.socket_memory_bytes
    share = ratio(sock or 0, ctx.mem_total)
    if sock is None or share is None or share < t.socket_memory_warn_share:
        return []
    return [
        Finding(
            code="SOCKET_MEMORY_HIGH",
            severity="warning",
            subject=ctx.node,
            facts=[
                fact("kernel.socket_memory_bytes", "socket buffers", sock, "bytes", SOCKSTAT),
                fact("kernel.socket_memory_share", "socket buffer share", share, "ratio", SOCKSTAT),
            ],
            params={
                "socket_memory_bytes": sock,
                "share_percent": round(share * 100, 1),
                "eviction_blind": 1,
            },
        )
    ]


RULES = (slab_unreclaimable_high, socket_memory_high)
