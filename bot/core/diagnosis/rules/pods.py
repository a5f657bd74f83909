"""Pod and container rules.

Codes:

- ``CONTAINER_NEAR_LIMIT``: working set / memory limit >= ``container_near_limit_ratio``
  (critical: a cgroup OOM kill is imminent) or >= ``container_warn_limit_ratio`` (warning).
- ``CONTAINER_OOM_KILLED``: the cgroup's ``oom_kill`` counter is non-zero, or the API's
  last termination reason is ``OOMKilled`` (with the restart count).
- ``USAGE_ABOVE_REQUEST``: working set >= ``usage_over_request_ratio`` x request and at least
  ``usage_over_request_min_bytes`` above it: memory the scheduler cannot see.
- ``BESTEFFORT_ON_GPU_NODE``: a BestEffort pod on a GPU node (oom_score_adj 1000, first to go;
  a pod asking only for ``nvidia.com/gpu`` is BestEffort too).
- ``GPU_POD_NO_PRIORITY``: a GPU pod (the critical training) with priority below
  ``critical_priority_threshold``: the kubelet ranks it like any other pod for eviction.
"""

from __future__ import annotations

from bot.core.diagnosis.attribution import ContainerUsage, norm_uid
from bot.core.diagnosis.findings import Finding
from bot.core.diagnosis.rules.context import Context, controller_of, fact, pod_source, ratio
from bot.core.model.quantity import quantity_value
from bot.core.model.thresholds import Thresholds


def _limit(c: ContainerUsage) -> int | None:
    if c.mem.limit_bytes:
        return c.mem.limit_bytes
    if c.info is not None:
        value = quantity_value(c.info.limits.get("memory"))
        return int(value) if value else None
    return None


def _subject(c: ContainerUsage) -> str:
    return c.pod.key if c.pod is not None else f"pod-uid/{c.mem.pod_uid or '?'}"


def container_near_limit(ctx: Context, t: Thresholds) -> list[Finding]:
    out: list[Finding] = []
    for c in ctx.attr.containers:
        ws, limit = c.mem.working_set_bytes, _limit(c)
        share = ratio(ws or 0, limit)
        if ws is None or share is None or share < t.container_warn_limit_ratio:
            continue
        source = f"cgroup:{c.mem.cgroup_path}"
        facts = [
            fact("container.working_set_bytes", "working set", ws, "bytes", source),
            fact("container.limit_bytes", "memory limit", limit, "bytes", source),
            fact("container.limit_ratio", "working set / limit", share, "ratio", source),
        ]
        if c.mem.oom_kill_events is not None:
            facts.append(
                fact(
                    "container.oom_kill_events", "oom_kill", c.mem.oom_kill_events, "count", source
                )
            )
        out.append(
            Finding(
                code="CONTAINER_NEAR_LIMIT",
                severity="critical" if share >= t.container_near_limit_ratio else "warning",
                subject=_subject(c),
                facts=facts,
                params={
                    "pod": _subject(c),
                    "container": c.name,
                    "controller": controller_of(c.pod) or "",
                    "working_set_bytes": ws,
                    "limit_bytes": limit or 0,
                    "percent": round(share * 100, 1),
                    "gpu_request": c.pod.accelerator_request if c.pod is not None else 0,
                },
            )
        )
    return out


def container_oom_killed(ctx: Context, t: Thresholds) -> list[Finding]:
    found: dict[tuple[str, str], Finding] = {}
    for c in ctx.attr.containers:
        kills = c.mem.oom_kill_events or 0
        if kills > 0:
            source = f"cgroup:{c.mem.cgroup_path}"
            found[(_subject(c), c.name)] = Finding(
                code="CONTAINER_OOM_KILLED",
                severity="critical",
                subject=_subject(c),
                facts=[fact("container.oom_kill_events", "oom_kill", kills, "count", source)],
                params={"pod": _subject(c), "container": c.name, "oom_kills": kills, "restarts": 0},
            )
    for pod in ctx.view.pods if ctx.view is not None else []:
        for info in pod.containers:
            if info.last_termination_reason != "OOMKilled":
                continue
            key = (pod.key, info.name)
            src = pod_source(pod)
            extra = [
                fact(
                    "container.last_termination_reason",
                    "last termination",
                    "OOMKilled",
                    "text",
                    src,
                ),
                fact("container.restart_count", "restarts", info.restart_count, "count", src),
            ]
            prior = found.get(key)
            params = (
                dict(prior.params)
                if prior
                else {"pod": pod.key, "container": info.name, "oom_kills": 0}
            )
            params["restarts"] = info.restart_count
            found[key] = Finding(
                code="CONTAINER_OOM_KILLED",
                severity="critical",
                subject=pod.key,
                facts=[*(prior.facts if prior else []), *extra],
                params=params,
            )
    return [found[k] for k in sorted(found)]


def usage_above_request(ctx: Context, t: Thresholds) -> list[Finding]:
    out: list[Finding] = []
    for usage in ctx.ranked_pods():
        pod, ws = usage.pod, usage.working_set_bytes or 0
        if pod is None:
            continue
        request = pod.memory_request_bytes
        excess = ws - request
        if excess < t.usage_over_request_min_bytes or ws < t.usage_over_request_ratio * request:
            continue
        out.append(
            Finding(
                code="USAGE_ABOVE_REQUEST",
                severity="warning",
                subject=pod.key,
                facts=[
                    fact("pod.working_set_bytes", "working set", ws, "bytes", usage.source),
                    fact(
                        "pod.memory_request_bytes",
                        "memory request",
                        request,
                        "bytes",
                        pod_source(pod),
                    ),
                ],
                params={
                    "pod": pod.key,
                    "working_set_bytes": ws,
                    "request_bytes": request,
                    "excess_bytes": excess,
                },
            )
        )
    return out


def besteffort_on_gpu_node(ctx: Context, t: Thresholds) -> list[Finding]:
    if ctx.view is None or not ctx.is_gpu_node:
        return []
    out: list[Finding] = []
    for pod in sorted(ctx.view.pods, key=lambda p: p.key):
        if pod.qos_class != "besteffort":
            continue
        usage = ctx.attr.pods.get(norm_uid(pod.uid) or "")
        ws = usage.working_set_bytes if usage is not None else None
        facts = [fact("pod.qos_class", "QoS class", "BestEffort", "text", pod_source(pod))]
        if ws is not None and usage is not None:
            facts.append(fact("pod.working_set_bytes", "working set", ws, "bytes", usage.source))
        out.append(
            Finding(
                code="BESTEFFORT_ON_GPU_NODE",
                severity="warning",
                subject=pod.key,
                facts=facts,
                params={
                    "pod": pod.key,
                    "working_set_bytes": ws if ws is not None else -1,
                    "gpu_request": pod.accelerator_request,
                },
            )
        )
    return out


def gpu_pod_no_priority(ctx: Context, t: Thresholds) -> list[Finding]:
    if ctx.view is None:
        return []
    out: list[Finding] = []
    for pod in sorted(ctx.view.pods, key=lambda p: p.key):
        if not pod.accelerated or pod.priority >= t.critical_priority_threshold:
            continue
        src = pod_source(pod)
        out.append(
            Finding(
                code="GPU_POD_NO_PRIORITY",
                severity="warning",
                subject=pod.key,
                facts=[
                    fact("pod.priority", "priority", pod.priority, "count", src),
                    fact(
                        "pod.priority_class_name",
                        "PriorityClass",
                        pod.priority_class_name or "",
                        "text",
                        src,
                    ),
                    fact(
                        "pod.gpu_request", "GPUs requested", pod.accelerator_request, "count", src
                    ),
                ],
                params={
                    "pod": pod.key,
                    "controller": controller_of(pod) or "",
                    "priority": pod.priority,
                    "priority_class": pod.priority_class_name or "",
                    "gpu_request": pod.accelerator_request,
                    "threshold": t.critical_priority_threshold,
                },
            )
        )
    return out


RULES = (
    container_near_limit,
    container_oom_killed,
    usage_above_request,
    besteffort_on_gpu_node,
    gpu_pod_no_priority,
)
