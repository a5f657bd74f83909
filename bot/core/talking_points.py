"""What to tell the AI/ML team and the ops team, every claim bound to facts. Pure: no I/O.

Wording lives in ``templates/*/talking_points`` (one sentence per key); this module only
chooses keys, params and facts. A point without facts is only ever ``unverified=True``.
``stance`` is relative to each team's usual position: AI team "our GPU use is fine",
ops team "the node is out of memory (because of the GPU jobs)". Keys are stable.

Byte params end in ``_bytes`` (ints); percentages in ``_percent`` (floats, one decimal)
unless noted (kubectl's integer percentages).

=================================  ==========  ==============================================
key                                stance      params
=================================  ==========  ==============================================
ai.gpu_memory_not_cause            supports    requested, allocatable, max_used_bytes,
                                               max_total_bytes, max_percent, gpu_count
ai.gpu_memory_is_cause             contradicts gpu_index, used_bytes, total_bytes, percent
ai.gpu_isolation_broken            contradicts requested, allocatable, mismatched
ai.host_memory_workload            neutral     pod, controller, working_set_bytes,
                                               limit_bytes, share_percent (separate from GPU),
                                               biggest_consumer (0/1: the node's largest pod)
ai.training_host_memory_cause      contradicts pod, working_set_bytes, limit_bytes,
                                               at_limit (0/1: container_limit verdict)
ai.container_near_limit            neutral     pod, container, working_set_bytes,
                                               limit_bytes, percent
ai.container_at_own_limit          neutral     pod, container, working_set_bytes,
                                               limit_bytes, gpu (0/1), limits_known (0/1),
                                               limits_headroom_bytes, limits_excess_bytes
                                               (allocatable vs limits total), available_bytes
                                               (MemAvailable, -1 unknown), room_bytes (the
                                               smaller of the two, >= 0; -1 unknown)
ai.suggest_memory_limit            neutral     pod, controller, current_limit_bytes,
                                               proposed_limit ("" when no tier-3 plan),
                                               working_set_bytes, below_working_set (0/1);
                                               only when the proposal is below the current
                                               limit (or there is none)
ai.suggest_chunked_processing      neutral     pod (e.g. Dask instead of pandas)
ai.suggest_dedicated_node_pool     neutral     pod, node
ai.training_request_buffer         neutral     pod, limit_bytes, request_bytes,
                                               suggested_request_bytes (87.5% of limit)
ai.training_priority_missing       neutral     pods, count, priority_class
ai.oom_killed                      neutral     pod, container, restarts, oom_kills
ops.verdict                        neutral     cause, subject, confidence
ops.node_out_of_memory             supports    available_bytes, mem_total_bytes,
                                               share_percent
ops.page_cache_squeezed            supports    buff_cache_bytes, available_bytes,
                                               share_percent (not when MemAvailable exceeds
                                               buff/cache: that is free memory, no pressure)
ops.gpu_not_cause                  contradicts requested, allocatable, max_used_bytes,
                                               max_total_bytes, max_percent
ops.limits_overcommitted           neutral     limits, requests, limits_percent,
                                               requests_percent (kubectl ints)
ops.kernel_slab_eviction_blind     neutral     s_unreclaim_bytes, share_percent
ops.socket_memory_eviction_blind   neutral     socket_memory_bytes, share_percent
ops.system_oom_without_eviction    neutral     count
ops.besteffort_on_gpu_node         neutral     pods, count
ops.gpu_process_without_pod        neutral     pid, command, gpu_index, used_bytes
ops.node_healthy                   contradicts node
ops.tier1_available                neutral     plan_id, evictions, protected,
                                               already_cordoned (0/1)
ops.tier2_available                neutral     plan_id, priority_class, restarts
ops.tier3_available                neutral     plan_id, target, memory_limit, memory_request,
                                               below_working_set (0/1), memory_unchanged
                                               (0/1), cpu_limit ("" none), omp_num_threads
unverified.gpu_memory              neutral     reason (both audiences, unverified=True)
unverified.gap                     neutral     source, reason (ops, unverified=True)
=================================  ==========  ==============================================

Pods the API view does not know (``pod-uid/...``: gpunode's own diagnostic pod, or a pod that
just left) get no point: nobody can act on them.
"""

from __future__ import annotations

from bot.core.cluster import ClusterView
from bot.core.findings import Audience, Diagnosis, Fact, Finding, TalkingPoint
from bot.core.rules.context import ALLOCATABLE, ALLOCATED, fact, pod_source
from bot.core.thresholds import DEFAULT, Thresholds

Params = dict[str, str | int | float]


def _point(
    audience: Audience, key: str, stance: str, facts: list[Fact], params: Params
) -> TalkingPoint:
    return TalkingPoint.model_validate(
        {"audience": audience, "key": key, "stance": stance, "facts": facts, "params": params}
    )


def _pick(f: Finding, *keys: str) -> Params:
    return {k: f.params[k] for k in keys if k in f.params}


def _by_code(d: Diagnosis) -> dict[str, list[Finding]]:
    out: dict[str, list[Finding]] = {}
    for f in d.findings:
        out.setdefault(f.code, []).append(f)
    return out


def _gpu_points(d: Diagnosis, codes: dict[str, list[Finding]]) -> list[TalkingPoint]:
    out: list[TalkingPoint] = []
    iso, ok = codes.get("GPU_ISOLATION_HOLDS"), codes.get("GPU_MEMORY_OK")
    if iso and ok and d.verdict.cause != "gpu_memory":
        params = {
            **_pick(iso[0], "requested", "allocatable"),
            **_pick(ok[0], "max_used_bytes", "max_total_bytes", "max_percent", "gpu_count"),
        }
        facts = [*iso[0].facts[:3], *ok[0].facts]
        out.append(_point("ai_team", "ai.gpu_memory_not_cause", "supports", facts, params))
        out.append(_point("ops_team", "ops.gpu_not_cause", "contradicts", facts, params))
    if d.verdict.cause == "gpu_memory":
        out.append(
            _point(
                "ai_team",
                "ai.gpu_memory_is_cause",
                "contradicts",
                list(d.verdict.facts),
                {
                    k: d.verdict.params[k]
                    for k in ("gpu_index", "used_bytes", "total_bytes", "percent")
                    if k in d.verdict.params
                },
            )
        )
    for f in codes.get("GPU_ISOLATION_BROKEN", []):
        out.append(
            _point(
                "ai_team",
                "ai.gpu_isolation_broken",
                "contradicts",
                f.facts,
                _pick(f, "requested", "allocatable", "mismatched"),
            )
        )
    for f in codes.get("GPU_PROCESS_NO_POD", []):
        out.append(
            _point(
                "ops_team",
                "ops.gpu_process_without_pod",
                "neutral",
                f.facts,
                _pick(f, "pid", "command", "gpu_index", "used_bytes"),
            )
        )
    for f in codes.get("GPU_NOT_VERIFIED", []):
        for audience in ("ai_team", "ops_team"):
            out.append(
                TalkingPoint(
                    audience=audience,
                    key="unverified.gpu_memory",
                    facts=f.facts,
                    params=_pick(f, "reason"),
                    unverified=True,
                )
            )
    return out


def _known_pod(key: str, view: ClusterView | None) -> bool:
    """A pod the API view knows. Cgroups of pods outside the view (gpunode's own diagnostic
    pod, deleted before the view is read, or a pod that just left) get no talking point:
    nobody can act on them."""
    if not key or key.startswith("pod-uid/"):
        return False
    return view is None or any(p.key == key for p in view.pods)


def _available_fact(codes: dict[str, list[Finding]]) -> Fact | None:
    """MemAvailable as a finding already quoted it (memory-available-low, page cache)."""
    for code in ("MEMORY_AVAILABLE_LOW", "PAGE_CACHE_SQUEEZED"):
        for f in codes.get(code, []):
            hit = next((x for x in f.facts if x.key == "node.mem_available_bytes"), None)
            if hit is not None and isinstance(hit.value, int | float):
                return hit
    return None


def _own_limit_point(
    d: Diagnosis, view: ClusterView | None, codes: dict[str, list[Finding]], pod: str, gpu: bool
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
    return _point("ai_team", "ai.container_at_own_limit", "neutral", facts, params)


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
    return _point(
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


def _culprit_points(
    d: Diagnosis, view: ClusterView | None, codes: dict[str, list[Finding]]
) -> list[TalkingPoint]:
    v = d.verdict
    out: list[TalkingPoint] = []
    if v.cause not in ("host_memory_workload", "container_limit") or not v.facts:
        return out
    pod = str(v.params.get("pod", v.subject or ""))
    if not _known_pod(pod, view):
        return out
    gpu = int(v.params.get("gpu_request", 0) or 0) > 0
    if view is not None:
        info = next((p for p in view.pods if p.key == pod), None)
        gpu = gpu or (info is not None and info.gpu_request > 0)
    at_limit = v.cause == "container_limit"
    facts = list(v.facts)
    if gpu:
        out.append(
            _point(
                "ai_team",
                "ai.training_host_memory_cause",
                "contradicts",
                facts,
                {
                    "pod": pod,
                    "working_set_bytes": v.params.get("working_set_bytes", 0),
                    "limit_bytes": v.params.get("limit_bytes", 0),
                    "at_limit": int(at_limit),
                },
            )
        )
    elif v.cause == "host_memory_workload":
        out.append(
            _point(
                "ai_team",
                "ai.host_memory_workload",
                "neutral",
                facts,
                {
                    k: v.params[k]
                    for k in (
                        "pod",
                        "controller",
                        "working_set_bytes",
                        "limit_bytes",
                        "share_percent",
                        "biggest_consumer",
                    )
                    if k in v.params
                },
            )
        )
    else:
        out.append(
            _point(
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
        out.append(_own_limit_point(d, view, codes, pod, gpu))
    suggestion = _limit_suggestion(d, pod)
    if suggestion is not None:
        out.append(suggestion)
    if v.cause == "host_memory_workload" and not gpu:
        out.append(
            _point("ai_team", "ai.suggest_chunked_processing", "neutral", facts, {"pod": pod})
        )
        out.append(
            _point(
                "ai_team",
                "ai.suggest_dedicated_node_pool",
                "neutral",
                facts,
                {"pod": pod, "node": d.node},
            )
        )
    return out


def _training_points(
    d: Diagnosis, view: ClusterView | None, codes: dict[str, list[Finding]], t: Thresholds
) -> list[TalkingPoint]:
    out: list[TalkingPoint] = []
    missing = codes.get("GPU_POD_NO_PRIORITY", [])
    if missing:
        pods = [str(f.params["pod"]) for f in missing]
        facts = [x for f in missing for x in f.facts[:1]]
        out.append(
            _point(
                "ai_team",
                "ai.training_priority_missing",
                "neutral",
                facts,
                {
                    "pods": ", ".join(pods),
                    "count": len(pods),
                    "priority_class": "gpunode-critical-training",
                },
            )
        )
    seen: set[str] = set()
    for pod in sorted(view.pods if view is not None else [], key=lambda p: p.key):
        owner = pod.top_owner
        group = f"{owner.kind}/{pod.namespace}/{owner.name}" if owner is not None else pod.key
        if pod.gpu_request <= 0 or not pod.memory_limit_bytes or group in seen:
            continue
        seen.add(group)
        suggested = int(pod.memory_limit_bytes * t.memory_request_ratio)
        if pod.memory_request_bytes >= suggested:
            continue
        src = pod_source(pod)
        out.append(
            _point(
                "ai_team",
                "ai.training_request_buffer",
                "neutral",
                [
                    fact(
                        "pod.memory_request_bytes",
                        "memory request",
                        pod.memory_request_bytes,
                        "bytes",
                        src,
                    ),
                    fact(
                        "pod.memory_limit_bytes",
                        "memory limit",
                        pod.memory_limit_bytes,
                        "bytes",
                        src,
                    ),
                ],
                {
                    "pod": pod.key,
                    "limit_bytes": pod.memory_limit_bytes,
                    "request_bytes": pod.memory_request_bytes,
                    "suggested_request_bytes": suggested,
                },
            )
        )
    for f in codes.get("CONTAINER_OOM_KILLED", []):
        if not _known_pod(str(f.params.get("pod", f.subject)), view):
            continue
        out.append(
            _point(
                "ai_team",
                "ai.oom_killed",
                "neutral",
                f.facts,
                _pick(f, "pod", "container", "restarts", "oom_kills"),
            )
        )
    return out


def _ops_points(d: Diagnosis, codes: dict[str, list[Finding]]) -> list[TalkingPoint]:
    out: list[TalkingPoint] = []
    v = d.verdict
    if v.facts and not (v.subject or "").startswith("pod-uid/"):
        out.append(
            _point(
                "ops_team",
                "ops.verdict",
                "neutral",
                list(v.facts),
                {"cause": v.cause, "subject": v.subject or "", "confidence": v.confidence},
            )
        )
    for f in codes.get("MEMORY_AVAILABLE_LOW", []):
        out.append(
            _point(
                "ops_team",
                "ops.node_out_of_memory",
                "supports",
                f.facts,
                _pick(f, "available_bytes", "mem_total_bytes", "share_percent"),
            )
        )
    for f in codes.get("PAGE_CACHE_SQUEEZED", []):
        out.append(
            _point(
                "ops_team",
                "ops.page_cache_squeezed",
                "supports",
                f.facts,
                _pick(f, "buff_cache_bytes", "available_bytes", "share_percent"),
            )
        )
    for f in codes.get("LIMITS_OVERCOMMITTED", []):
        out.append(
            _point(
                "ops_team",
                "ops.limits_overcommitted",
                "neutral",
                f.facts,
                _pick(f, "limits", "requests", "limits_percent", "requests_percent"),
            )
        )
    for f in codes.get("KERNEL_SLAB_UNRECLAIMABLE_HIGH", []):
        out.append(
            _point(
                "ops_team",
                "ops.kernel_slab_eviction_blind",
                "neutral",
                f.facts,
                _pick(f, "s_unreclaim_bytes", "share_percent"),
            )
        )
    for f in codes.get("SOCKET_MEMORY_HIGH", []):
        out.append(
            _point(
                "ops_team",
                "ops.socket_memory_eviction_blind",
                "neutral",
                f.facts,
                _pick(f, "socket_memory_bytes", "share_percent"),
            )
        )
    if codes.get("SYSTEM_OOM_EVENTS") and not codes.get("POD_EVICTED_EVENTS"):
        f = codes["SYSTEM_OOM_EVENTS"][0]
        out.append(
            _point(
                "ops_team", "ops.system_oom_without_eviction", "neutral", f.facts, _pick(f, "count")
            )
        )
    best = codes.get("BESTEFFORT_ON_GPU_NODE", [])
    if best:
        out.append(
            _point(
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
                _point(
                    "ops_team", "ops.node_healthy", "contradicts", healthy_facts, {"node": d.node}
                )
            )
    return out


def _plan_points(d: Diagnosis) -> list[TalkingPoint]:
    out: list[TalkingPoint] = []
    src = f"k8s:node/{d.node}/pods"
    for plan in d.plans:
        if not plan.available:
            continue
        if plan.tier == 1:
            facts = [
                fact("plan.evictions", "pods to evict", len(plan.blast_radius), "count", src),
                fact("plan.protected", "pods protected", len(plan.protected), "count", src),
            ]
            params: Params = {
                "plan_id": plan.plan_id,
                "evictions": len(plan.blast_radius),
                "protected": len(plan.protected),
                "already_cordoned": int("already_cordoned" in plan.warnings),
            }
        elif plan.tier == 2:
            facts = [fact("plan.restarts", "pods that restart", len(plan.restarts), "count", src)]
            cls = next((s.name for s in plan.steps if s.verb == "ensure_priority_class"), "")
            params = {
                "plan_id": plan.plan_id,
                "priority_class": cls,
                "restarts": len(plan.restarts),
            }
        else:
            if plan.values is None:
                continue
            facts = list(d.verdict.facts)
            params = {
                "plan_id": plan.plan_id,
                "target": plan.target or "",
                "memory_limit": plan.values.memory_limit,
                "memory_request": plan.values.memory_request,
                "below_working_set": int(plan.values.below_working_set),
                "memory_unchanged": int("memory_limit_unchanged" in plan.warnings),
                "cpu_limit": plan.values.cpu_limit or "",
                "omp_num_threads": plan.values.omp_num_threads or 0,
            }
        if facts:
            out.append(
                _point("ops_team", f"ops.tier{plan.tier}_available", "neutral", facts, params)
            )
    return out


def build_talking_points(
    diagnosis: Diagnosis, view: ClusterView | None, *, thresholds: Thresholds = DEFAULT
) -> list[TalkingPoint]:
    """AI-team points first, then ops-team points; deterministic order."""
    codes = _by_code(diagnosis)
    points = [
        *_gpu_points(diagnosis, codes),
        *_culprit_points(diagnosis, view, codes),
        *_training_points(diagnosis, view, codes, thresholds),
        *_ops_points(diagnosis, codes),
        *_plan_points(diagnosis),
    ]
    for gap in diagnosis.unverified:
        points.append(
            TalkingPoint(
                audience="ops_team",
                key="unverified.gap",
                params={"source": gap.source, "reason": gap.reason},
                unverified=True,
            )
        )
    points.sort(key=lambda p: 0 if p.audience == "ai_team" else 1)
    return points
