"""Points from the attribution itself, symmetric for both teams. Pure: no I/O.

A team hears that it is at fault when its numbers say so, as plainly as the other team would:

- the primary consumer is outside every pod (a process of a systemd unit, kernel slab or other
  kernel memory, huge pages, host shmem, a GPU process of no pod): the ops team hears it
  (``ops.consumer_outside_pods``, contradicts "the GPU jobs did it") and the AI team hears
  that its pods are not the cause (``ai.pods_not_cause``, supports);
- a pod's tmpfs, ``/dev/shm`` or memory-backed emptyDir holds the memory: its team hears it
  (``ai.shmem_held``, contradicts);
- a GPU pod is among the consumers that explain the shortage without being the primary one:
  the AI team hears its share and rank (``ai.training_host_memory_share``, contradicts): its
  working set and its place in the pod list, by the same figure the list ranks by.

Keys: ops.consumer_outside_pods, ai.pods_not_cause, ai.shmem_held,
ai.training_host_memory_share.
"""

from __future__ import annotations

from bot.core.diagnosis.findings import Diagnosis, TalkingPoint
from bot.core.diagnosis.rules.context import fact
from bot.core.model.cluster import ClusterView
from bot.core.model.workload_kinds import workload_kind
from bot.core.reporting.points.common import Params, known_pod, point

_OUTSIDE = frozenset(
    {"system_process", "kernel_slab", "kernel_memory", "hugepages", "shmem", "gpu_orphan"}
)


def _pods_bytes(d: Diagnosis) -> int:
    return sum(e.bytes for e in d.ledger.entries if e.category == "pod")


def pod_figures(d: Diagnosis) -> dict[str, int]:
    """Each pod's one figure (its working set, ``LedgerEntry.figure``), as the pod lists show it."""
    return {e.pod_key: e.figure for e in d.ledger.entries if e.category == "pod" and e.pod_key}


def consumer_rank(figures: dict[str, int], pod: str, held: int) -> int:
    """The pod's place in the pod list (by the same figure, largest first, ties by name)."""
    return 1 + sum(1 for k, b in figures.items() if b > held or (b == held and k < pod))


def attribution_points(d: Diagnosis, view: ClusterView | None) -> list[TalkingPoint]:
    v = d.verdict
    out: list[TalkingPoint] = []
    outside = v.cause in _OUTSIDE and not (v.cause == "shmem" and v.subject != "host")
    if outside and v.facts:
        params: Params = {
            "cause": v.cause,
            "subject": v.subject or "",
            "held_bytes": v.primary_bytes,
            "share_percent": round(v.share * 100, 1),
            "shortage_bytes": v.shortage_bytes,
        }
        out.append(
            point("ops_team", "ops.consumer_outside_pods", "contradicts", list(v.facts), params)
        )
        if d.ledger.total_bytes and v.cause != "gpu_orphan":  # host RAM vs host RAM only
            pods = _pods_bytes(d)
            pods_fact = fact(
                "node.pods_bytes", "all pods' memory", pods, "bytes", "cgroup:kubepods"
            )
            out.append(
                point(
                    "ai_team",
                    "ai.pods_not_cause",
                    "supports",
                    [*v.facts[:1], pods_fact],
                    {
                        **params,
                        "pods_bytes": pods,
                        "pods_share_percent": round(pods * 100 / d.ledger.total_bytes, 1),
                    },
                )
            )
    if v.cause == "shmem" and v.subject != "host" and known_pod(v.subject or "", view):
        out.append(
            point(
                "ai_team",
                "ai.shmem_held",
                "contradicts",
                list(v.facts),
                {
                    "pod": v.subject or "",
                    "held_bytes": v.primary_bytes,
                    "share_percent": round(v.share * 100, 1),
                    # the pod's one figure, stated first: its /dev/shm is part of it
                    "working_set_bytes": pod_figures(d).get(
                        v.subject or "", int(v.params.get("working_set_bytes", 0))
                    ),
                },
            )
        )
    if v.cause == "host_memory_workload" and view is not None:
        gpu_pods = {p.key: p for p in view.pods if p.gpu_request > 0}
        figures = pod_figures(d)
        for c in v.contributing:
            info = gpu_pods.get(c.subject)
            if c.cause != "host_memory_workload" or info is None:
                continue
            if not known_pod(c.subject, view):
                continue
            src = f"k8s:pod/{c.subject}"
            held = figures.get(c.subject, c.bytes)
            total = d.ledger.total_bytes
            out.append(
                point(
                    "ai_team",
                    "ai.training_host_memory_share",
                    "contradicts",
                    [fact("pod.host_memory_bytes", "host memory held", held, "bytes", src)],
                    {
                        "pod": c.subject,
                        "held_bytes": held,
                        "share_percent": round(held * 100 / total, 1) if total else 0.0,
                        "rank": consumer_rank(figures, c.subject, held),
                        "primary": v.subject or "",
                        "kind": workload_kind(info),
                        "request_bytes": info.memory_request_bytes,
                        "above_bytes": max(0, held - info.memory_request_bytes),
                    },
                )
            )
    return out
