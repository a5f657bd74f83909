"""GPU points for both audiences: GPU memory is (not) the cause, isolation, GPU processes
without a pod, and GPU memory we could not verify. Pure: no I/O.

Keys: ai.gpu_memory_not_cause, ops.gpu_not_cause, ai.gpu_memory_is_cause,
ai.foreign_process_on_gpu (a process of no pod holds a GPU: its session, unit, command line),
ai.gpu_isolation_broken, ops.gpu_process_without_pod, unverified.gpu_memory.
"""

from __future__ import annotations

from bot.core.diagnosis.findings import Diagnosis, TalkingPoint
from bot.core.reporting.points.common import Codes, per_finding, pick, point


def gpu_points(d: Diagnosis, codes: Codes) -> list[TalkingPoint]:
    """Isolation holding and GPU memory fine make "not the GPU" a claim for both teams,
    unless the verdict itself blames GPU memory."""
    out: list[TalkingPoint] = []
    iso, ok = codes.get("GPU_ISOLATION_HOLDS"), codes.get("GPU_MEMORY_OK")
    gpu_consumer = d.verdict.cause == "host_memory_workload" and bool(
        d.verdict.params.get("gpu_request", 0)
    )
    if iso and ok and d.verdict.cause != "gpu_memory":
        params = {
            **pick(iso[0], "requested", "allocatable"),
            **pick(ok[0], "max_used_bytes", "max_total_bytes", "max_percent", "gpu_count"),
        }
        facts = [*iso[0].facts[:3], *ok[0].facts]
        if not gpu_consumer:  # GPU memory is fine, but their pod holds the host RAM
            out.append(point("ai_team", "ai.gpu_memory_not_cause", "supports", facts, params))
        out.append(point("ops_team", "ops.gpu_not_cause", "contradicts", facts, params))
    if d.verdict.cause == "gpu_memory":
        out.append(
            point(
                "ai_team",
                "ai.gpu_memory_is_cause",
                "contradicts",
                list(d.verdict.facts),
                {
                    k: d.verdict.params[k]
                    for k in (
                        "gpu_index",
                        "used_bytes",
                        "total_bytes",
                        "percent",
                        "pod",
                        "process_bytes",
                        "sharing",
                        "replicas",
                        "fair_share_bytes",
                        "crash_pods",
                        "crash_count",
                    )
                    if k in d.verdict.params
                },
            )
        )
    if d.verdict.cause == "gpu_orphan" and "pid" in d.verdict.params:
        keys = (
            "gpu_index",
            "pid",
            "command",
            "cmdline",
            "origin",
            "unit",
            "user_id",
            "process_bytes",
            "total_bytes",
            "gpu_pods",
            "gpu_pod_count",
        )
        out.append(
            point(
                "ai_team",
                "ai.foreign_process_on_gpu",
                "supports",
                list(d.verdict.facts),
                {k: d.verdict.params[k] for k in keys if k in d.verdict.params},
            )
        )
    out += per_finding(
        codes,
        "GPU_ISOLATION_BROKEN",
        ("ai_team", "ai.gpu_isolation_broken", "contradicts"),
        keys=("requested", "allocatable", "mismatched"),
    )
    out += per_finding(
        codes,
        "GPU_PROCESS_NO_POD",
        ("ops_team", "ops.gpu_process_without_pod", "neutral"),
        keys=("pid", "command", "gpu_index", "used_bytes"),
    )
    for f in codes.get("GPU_NOT_VERIFIED", []):
        for audience in ("ai_team", "ops_team"):
            out.append(
                TalkingPoint(
                    audience=audience,
                    key="unverified.gpu_memory",
                    facts=f.facts,
                    params={k: v for k, v in f.params.items() if k == "reason" or k[:4] == "gap_"},
                    unverified=True,
                )
            )
    return out
