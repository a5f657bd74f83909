"""Points that make GPU pods safer, for the AI team: a priority class, requests equal to
limits (Guaranteed QoS: what protects a pod from node-pressure kills), and OOM kills.
Pure: no I/O.

Keys: ai.training_priority_missing, ai.training_request_buffer, ai.oom_killed.
"""

from __future__ import annotations

from bot.core.diagnosis.findings import Diagnosis, TalkingPoint
from bot.core.diagnosis.rules.context import fact, pod_source
from bot.core.model.cluster import ClusterView
from bot.core.model.thresholds import Thresholds
from bot.core.model.workload_kinds import workload_kind
from bot.core.remedies.planning import consumer_group
from bot.core.reporting.points.common import (
    Codes,
    host_pressured,
    known_pod,
    per_finding,
    pick,
    point,
)


def training_points(
    d: Diagnosis, view: ClusterView | None, *, codes: Codes, t: Thresholds
) -> list[TalkingPoint]:
    out: list[TalkingPoint] = []
    consumer = consumer_group(d)
    # a GPU pod's container at its own limit: its team hears it whatever the node has left
    # (the verdict's own subject has its point already)
    subject = str(d.verdict.params.get("pod", d.verdict.subject or ""))
    out += [
        point(
            "ai_team",
            "ai.container_near_limit",
            "neutral",
            f.facts,
            {
                **pick(f, "pod", "container", "working_set_bytes", "limit_bytes", "percent"),
                "own_limit": 1,
            },
        )
        for f in codes.get("CONTAINER_NEAR_LIMIT", [])
        if f.severity == "critical"
        and f.params.get("gpu_request", 0)
        and f.subject != subject
        and known_pod(f.subject, view)
    ]
    if not host_pressured(d, codes):  # nothing threatens them with eviction: no advice
        return out + per_finding(
            codes,
            "CONTAINER_OOM_KILLED",
            ("ai_team", "ai.oom_killed", "neutral"),
            keys=("pod", "container", "restarts", "oom_kills"),
            when=lambda f: known_pod(str(f.params.get("pod", f.subject)), view),
        )
    # never advise raising the priority of the pod that holds the node's memory
    missing = [
        f
        for f in codes.get("GPU_POD_NO_PRIORITY", [])
        if consumer is None or consumer not in (f.subject, f.params.get("controller"))
    ]
    if missing:
        pods = [str(f.params["pod"]) for f in missing]
        facts = [x for f in missing for x in f.facts[:1]]
        out.append(
            point(
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
        if not pod.accelerated or not pod.memory_limit_bytes or group in seen:
            continue
        if consumer is not None and consumer in (group, pod.key):
            continue  # never advise protecting the consumer
        seen.add(group)
        # protection from node-pressure kills is Guaranteed QoS (requests = limits), not a
        # request a little higher: a Burstable pod is still ranked by its usage above request
        suggested = pod.memory_limit_bytes
        if pod.memory_request_bytes >= suggested:
            continue
        src = pod_source(pod)
        out.append(
            point(
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
                    "kind": workload_kind(pod),
                },
            )
        )
    out += per_finding(
        codes,
        "CONTAINER_OOM_KILLED",
        ("ai_team", "ai.oom_killed", "neutral"),
        keys=("pod", "container", "restarts", "oom_kills"),
        when=lambda f: known_pod(str(f.params.get("pod", f.subject)), view),
    )
    return out
