"""Node-side points for the ops team: the verdict, memory pressure, overcommitted limits,
kernel memory the kubelet cannot see, OOMs without evictions, BestEffort pods on a GPU node,
a healthy node. Pure: no I/O.

Keys: ops.verdict, ops.node_out_of_memory, ops.page_cache_squeezed, ops.limits_overcommitted,
ops.kernel_slab_eviction_blind, ops.socket_memory_eviction_blind,
ops.system_oom_without_eviction, ops.besteffort_on_gpu_node, ops.node_healthy.
"""

from __future__ import annotations

from bot.core.diagnosis.findings import Diagnosis, TalkingPoint
from bot.core.reporting.points.common import Codes, per_finding, pick, point

#: finding code -> one ops-team point per finding: key, stance, the params it quotes
_PER_FINDING: tuple[tuple[str, str, str, tuple[str, ...]], ...] = (
    (
        "MEMORY_AVAILABLE_LOW",
        "ops.node_out_of_memory",
        "supports",
        ("available_bytes", "mem_total_bytes", "share_percent"),
    ),
    (
        "PAGE_CACHE_SQUEEZED",
        "ops.page_cache_squeezed",
        "supports",
        ("buff_cache_bytes", "available_bytes", "share_percent"),
    ),
    (
        "LIMITS_OVERCOMMITTED",
        "ops.limits_overcommitted",
        "neutral",
        ("limits", "requests", "limits_percent", "requests_percent"),
    ),
    (
        "KERNEL_SLAB_UNRECLAIMABLE_HIGH",
        "ops.kernel_slab_eviction_blind",
        "neutral",
        ("s_unreclaim_bytes", "share_percent"),
    ),
    (
        "SOCKET_MEMORY_HIGH",
        "ops.socket_memory_eviction_blind",
        "neutral",
        ("socket_memory_bytes", "share_percent"),
    ),
)


def ops_points(d: Diagnosis, codes: Codes) -> list[TalkingPoint]:
    out: list[TalkingPoint] = []
    v = d.verdict
    if v.facts and not (v.subject or "").startswith("pod-uid/"):
        out.append(
            point(
                "ops_team",
                "ops.verdict",
                "neutral",
                list(v.facts),
                {"cause": v.cause, "subject": v.subject or "", "confidence": v.confidence},
            )
        )
    for code, key, stance, keys in _PER_FINDING:
        out += per_finding(codes, code, ("ops_team", key, stance), keys=keys)
    if codes.get("SYSTEM_OOM_EVENTS") and not codes.get("POD_EVICTED_EVENTS"):
        f = codes["SYSTEM_OOM_EVENTS"][0]
        out.append(
            point(
                "ops_team", "ops.system_oom_without_eviction", "neutral", f.facts, pick(f, "count")
            )
        )
    best = codes.get("BESTEFFORT_ON_GPU_NODE", [])
    if best:
        out.append(
            point(
                "ops_team",
                "ops.besteffort_on_gpu_node",
                "neutral",
                [f.facts[0] for f in best],
                {"pods": ", ".join(f.subject for f in best), "count": len(best)},
            )
        )
    if v.cause == "healthy":
        healthy_facts = [x for f in d.findings if f.severity == "ok" for x in f.facts[:2]]
        if healthy_facts:
            out.append(
                point(
                    "ops_team",
                    "ops.node_healthy",
                    "contradicts",
                    healthy_facts,
                    {
                        "node": d.node,
                        "reason": str(v.params.get("reason", "within_bounds")),
                        "page_cache_bytes": v.params.get("page_cache_bytes", 0),
                    },
                )
            )
    return out
