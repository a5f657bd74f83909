"""Points about the workload the verdict names (host memory or its own container limit), for
the AI team: what it is, what helps it, and a memory limit worth suggesting. Pure: no I/O.

Keys: ai.training_host_memory_cause, ai.host_memory_workload, ai.container_near_limit,
ai.container_at_own_limit, ai.suggest_memory_limit, ai.suggest_chunked_processing,
ai.suggest_dedicated_node_pool.
"""

from __future__ import annotations

from bot.core.diagnosis.findings import Diagnosis, Fact, TalkingPoint
from bot.core.diagnosis.rules.context import ALLOCATABLE, ALLOCATED, fact
from bot.core.model.cluster import ClusterView
from bot.core.model.workload_kinds import is_sidecar, workload_kind
from bot.core.reporting.points.common import Codes, Params, known_pod, point


def _available_fact(codes: Codes) -> Fact | None:
    """MemAvailable as a finding already quoted it (memory-available-low, page cache)."""
    for code in ("MEMORY_AVAILABLE_LOW", "PAGE_CACHE_SQUEEZED"):
        for f in codes.get(code, []):
            hit = next((x for x in f.facts if x.key == "node.mem_available_bytes"), None)
            if hit is not None and isinstance(hit.value, int | float):
                return hit
    return None


def _own_limit_point(
    d: Diagnosis, view: ClusterView | None, codes: Codes, pod: str, gpu: bool, words: Params
) -> TalkingPoint:
    """``ai.container_at_own_limit``: what helps a container at its own limit. The kubelet
    does not: a cgroup OOM kill is per container and comes before any node-level eviction.
    The raise option is stated with the node's room (allocatable - limits total, MemAvailable)
    so nobody raises a limit into a node that has nothing left."""
    v = d.verdict
    facts = list(v.facts)
    params: Params = {
        "pod": pod,
        "container": str(v.params.get("container", "")),
        "working_set_bytes": v.params.get("working_set_bytes", 0),
        "limit_bytes": v.params.get("limit_bytes", 0),
        "gpu": int(gpu),
        **words,
        "limits_known": 0,
        "limits_headroom_bytes": 0,
        "limits_excess_bytes": 0,
        "available_bytes": -1,
        "room_bytes": -1,
    }
    rooms: list[int] = []
    row = next((r for r in view.allocated if r.resource == "memory"), None) if view else None
    if row is not None and row.allocatable_value:
        alloc, limits = int(row.allocatable_value), int(row.limits_value)
        params.update(
            limits_known=1,
            limits_headroom_bytes=max(0, alloc - limits),
            limits_excess_bytes=max(0, limits - alloc),
        )
        rooms.append(alloc - limits)
        facts += [
            fact("node.memory_limits_bytes", "memory limits", limits, "bytes", ALLOCATED),
            fact("node.memory_allocatable_bytes", "allocatable", alloc, "bytes", ALLOCATABLE),
        ]
    avail = _available_fact(codes)
    if avail is not None and isinstance(avail.value, int | float):
        params["available_bytes"] = int(avail.value)
        rooms.append(int(avail.value))
        facts.append(avail)
    if rooms:
        params["room_bytes"] = max(0, min(rooms))
    return point("ai_team", "ai.container_at_own_limit", "neutral", facts, params)


def _limit_suggestion(d: Diagnosis, pod: str) -> TalkingPoint | None:
    """``ai.suggest_memory_limit`` only when it suggests something: tier 3 proposes a limit
    below the current one (or the container has none). A "cap" equal to today's limit is
    not advice; without a tier-3 plan, only a workload with no limit is told to get one."""
    v = d.verdict
    current = v.params.get("limit_bytes", 0)
    current_bytes = int(current) if isinstance(current, int | float) else 0
    tier3 = next((p for p in d.plans if p.tier == 3 and p.available and p.values is not None), None)
    values = tier3.values if tier3 is not None else None
    if values is None:
        if current_bytes > 0 or v.cause != "host_memory_workload":
            return None
    elif current_bytes > 0 and values.memory_limit_bytes >= current_bytes:
        return None
    return point(
        "ai_team",
        "ai.suggest_memory_limit",
        "neutral",
        list(v.facts),
        {
            "pod": pod,
            "controller": str(v.params.get("controller", "")),
            "current_limit_bytes": current_bytes,
            "proposed_limit": values.memory_limit if values is not None else "",
            "working_set_bytes": v.params.get("working_set_bytes", 0),
            "below_working_set": int(values.below_working_set) if values is not None else 0,
        },
    )


def _words(d: Diagnosis, view: ClusterView | None, pod: str) -> Params:
    """How to speak of the pod: its kind (``bot.core.model.workload_kinds``), whether the container
    holding the memory is a sidecar, and whether the node has GPUs at all."""
    info = next((p for p in view.pods if p.key == pod), None) if view is not None else None
    container = str(d.verdict.params.get("container", ""))
    return {
        "kind": workload_kind(info) if info is not None else "workload",
        "sidecar": int(info is not None and bool(container) and is_sidecar(info, container)),
        "gpu_node": int(d.verdict.params.get("gpu_node", 1) or 0),
    }


def culprit_points(d: Diagnosis, view: ClusterView | None, *, codes: Codes) -> list[TalkingPoint]:
    v = d.verdict
    out: list[TalkingPoint] = []
    if v.cause not in ("host_memory_workload", "container_limit") or not v.facts:
        return out
    pod = str(v.params.get("pod", v.subject or ""))
    if not known_pod(pod, view):
        return out
    gpu = int(v.params.get("gpu_request", 0) or 0) > 0
    if view is not None:
        info = next((p for p in view.pods if p.key == pod), None)
        gpu = gpu or (info is not None and info.accelerated)
    words = _words(d, view, pod)
    at_limit = v.cause == "container_limit"
    facts = list(v.facts)
    contract: Params = {
        k: v.params[k] for k in ("request_bytes", "pod_above_request_bytes") if k in v.params
    }
    if gpu:
        out.append(
            point(
                "ai_team",
                "ai.training_host_memory_cause",
                "contradicts",
                facts,
                {
                    "pod": pod,
                    "container": str(v.params.get("container", "")),
                    "working_set_bytes": v.params.get("working_set_bytes", 0),
                    "limit_bytes": v.params.get("limit_bytes", 0),
                    "at_limit": int(at_limit),
                    "request_bytes": v.params.get("request_bytes", 0),
                    "share_percent": v.params.get("share_percent", round(v.share * 100, 1)),
                    "processes": str(v.params.get("processes", "")),
                    "shmem_bytes": v.params.get("shmem_bytes", 0),
                    **contract,
                    **words,
                },
            )
        )
    elif v.cause == "host_memory_workload":
        out.append(
            point(
                "ai_team",
                "ai.host_memory_workload",
                "neutral",
                facts,
                {
                    **{
                        k: v.params[k]
                        for k in (
                            "pod",
                            "controller",
                            "working_set_bytes",
                            "limit_bytes",
                            "share_percent",
                        )
                        if k in v.params
                    },
                    **contract,
                    "gpu_node": words["gpu_node"],
                },
            )
        )
    else:
        out.append(
            point(
                "ai_team",
                "ai.container_near_limit",
                "neutral",
                facts,
                {
                    k: v.params[k]
                    for k in ("pod", "container", "working_set_bytes", "limit_bytes", "percent")
                    if k in v.params
                },
            )
        )
    if at_limit:
        out.append(_own_limit_point(d, view, codes, pod, gpu, words))
    suggestion = _limit_suggestion(d, pod)
    if suggestion is not None:
        out.append(suggestion)
    if v.cause == "host_memory_workload" and not gpu:
        out.append(
            point("ai_team", "ai.suggest_chunked_processing", "neutral", facts, {"pod": pod})
        )
        if words["gpu_node"]:  # a dedicated CPU pool is advice for GPU nodes only
            out.append(
                point(
                    "ai_team",
                    "ai.suggest_dedicated_node_pool",
                    "neutral",
                    facts,
                    {"pod": pod, "node": d.node},
                )
            )
    return out
