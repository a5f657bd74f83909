"""Rules over the kernel's own record (``EvidenceBundle.kernel_log``): OOM kills and XIDs.

Codes:

- ``KERNEL_OOM_KILL``: one per victim (the latest five), ``critical`` when the
  global OOM killer ran (scope ``node``: the machine ran out), ``warning`` for a cgroup kill
  (scope ``cgroup``: a container, pod or the kubepods cgroup hit its own limit; the kernel
  killed inside that cgroup, not the kubelet's eviction). ``limit_level`` says which limit:
  ``container``, ``pod``, ``kubepods`` (all pods together hit node allocatable) or ``other``.
- ``GPU_XID``: one per GPU and XID code (count and latest time), ``critical`` when the code
  means the GPU is lost until reset (``bot.core.diagnosis.xid``; only these may decide the verdict
  ``gpu_xid``), ``warning`` for other hardware codes, ``info`` for application/driver codes.

Sources: ``kmsg:/dev/kmsg``. Times are ISO strings in params named ``*_at``.
"""

from __future__ import annotations

import re

from bot.core.diagnosis.attribution import norm_uid
from bot.core.diagnosis.findings import Finding, Severity
from bot.core.diagnosis.rules.context import Context, fact
from bot.core.diagnosis.xid import describe
from bot.core.model.cluster import PodInfo
from bot.core.model.kernel_records import OomKill, XidEvent
from bot.core.model.thresholds import Thresholds

KMSG = "kmsg:/dev/kmsg"
_POD_SEGMENT = re.compile(r"pod[0-9a-fA-F]{8}[-_][0-9a-fA-F]{4}")
MAX_REPORTED = 5


def _segments(path: str | None) -> list[str]:
    return [s for s in (path or "").split("/") if s]


def limit_level(kill: OomKill) -> str:
    """Which cgroup's limit an OOM kill enforced, from ``oom_memcg`` vs ``task_memcg``."""
    oom, task = _segments(kill.oom_memcg), _segments(kill.task_memcg)
    if not oom:
        return ""
    if oom == task and kill.container_id:
        return "container"
    if _POD_SEGMENT.search(oom[-1]):
        return "pod"
    if oom[-1].startswith("kubepods"):
        return "kubepods"
    return "other"


def _pod_and_container(ctx: Context, kill: OomKill) -> tuple[PodInfo | None, str]:
    pod = ctx.attr.view_pods.get(norm_uid(kill.pod_uid) or "")
    name = ""
    if pod is not None and kill.container_id:
        for info in pod.containers:
            if info.container_id and info.container_id.lower() == kill.container_id.lower():
                name = info.name
    return pod, name


def _time(at: object) -> str:
    return at.isoformat() if hasattr(at, "isoformat") else ""


def oom_kills(ctx: Context, t: Thresholds) -> list[Finding]:
    log = ctx.bundle.kernel_log
    if log is None or not log.oom_kills:
        return []
    out = []
    total = len(log.oom_kills)
    for kill in log.oom_kills[-MAX_REPORTED:]:
        pod, container = _pod_and_container(ctx, kill)
        who = pod.key if pod is not None else ""
        subject = who or (f"pod-uid/{kill.pod_uid}" if kill.pod_uid else ctx.node)
        facts = [
            fact("oom.victim_pid", "PID", kill.pid, "count", KMSG),
            fact("oom.scope", "OOM killer", kill.scope, "text", KMSG),
        ]
        if kill.anon_rss_bytes is not None:
            facts.append(fact("oom.anon_rss_bytes", "anon-rss", kill.anon_rss_bytes, "bytes", KMSG))
        if kill.oom_memcg:
            facts.append(fact("oom.oom_memcg", "cgroup at its limit", kill.oom_memcg, "text", KMSG))
        severity: Severity = "critical" if kill.scope == "node" else "warning"
        out.append(
            Finding(
                code="KERNEL_OOM_KILL",
                severity=severity,
                subject=subject,
                facts=facts,
                params={
                    "scope": kill.scope,
                    "comm": kill.comm,
                    "pid": kill.pid,
                    "killed_at": _time(kill.at),
                    "anon_rss_bytes": kill.anon_rss_bytes
                    if kill.anon_rss_bytes is not None
                    else -1,
                    "file_rss_bytes": kill.file_rss_bytes
                    if kill.file_rss_bytes is not None
                    else -1,
                    "pod": who,
                    "container": container,
                    "limit_level": limit_level(kill),
                    "invoked_by": kill.invoked_by or "",
                    "kills_in_window": total,
                    "window_s": log.window_s,
                },
            )
        )
    return out


def _gpu_label(x: XidEvent) -> str:
    return x.gpu_uuid or (f"PCI {x.pci_bus_id}" if x.pci_bus_id else "unknown GPU")


def gpu_xids(ctx: Context, t: Thresholds) -> list[Finding]:
    log = ctx.bundle.kernel_log
    if log is None or not log.xids:
        return []
    groups: dict[tuple[str, int], list[XidEvent]] = {}
    for x in log.xids:
        groups.setdefault((_gpu_label(x), x.code), []).append(x)
    out = []
    for (label, code), events in groups.items():
        last = events[-1]
        info = describe(code)
        severity: Severity = (
            "critical" if info.gpu_lost else "warning" if info.origin == "hardware" else "info"
        )
        out.append(
            Finding(
                code="GPU_XID",
                severity=severity,
                subject=label,
                facts=[
                    fact(
                        "gpu.xid", f"on PCI {last.pci_bus_id or '?'}", f"XID {code}", "text", KMSG
                    ),
                    fact("gpu.xid_count", "XID events", len(events), "count", KMSG),
                ],
                params={
                    "code": code,
                    "meaning": info.meaning,
                    "origin": info.origin,
                    "action": info.action,
                    "gpu_lost": int(info.gpu_lost),
                    "gpu_index": last.gpu_index if last.gpu_index is not None else -1,
                    "gpu_uuid": last.gpu_uuid or "",
                    "pci_bus_id": last.pci_bus_id or "",
                    "last_at": _time(last.at),
                    "count": len(events),
                    "process": last.process or "",
                },
            )
        )
    return out


RULES = (oom_kills, gpu_xids)
