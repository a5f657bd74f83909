"""Event and node-condition rules: what already went wrong.

Codes:

- ``SYSTEM_OOM_EVENTS`` (critical): the kernel's global OOM killer ran (the kubelet did not
  evict in time, or could not see the memory). Only two events say so: the kubelet's
  ``SystemOOM`` (recorded when the OOM's memcg is the root, ``/``) and node-problem-detector's
  ``OOMKilling`` whose kernel line lacks "Memory cgroup out of memory".
- ``CGROUP_OOM_EVENTS`` (warning): ``OOMKilling`` for a kill inside a memory cgroup that hit
  its own limit. NPD's kernel-monitor rule matches every "Killed process" line, so these come
  under the same reason; they say nothing about the node as a whole (never "pressured").
- ``POD_EVICTED_EVENTS`` (warning): ``Evicted`` events (kubelet node-pressure eviction).
- ``NODE_MEMORY_PRESSURE`` (warning): the node condition ``MemoryPressure`` is True.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Literal

from bot.core.diagnosis.findings import Finding
from bot.core.diagnosis.rules.context import EVENTS, Context, fact
from bot.core.model.cluster import EventInfo
from bot.core.model.thresholds import Thresholds

_OOM_REASONS = frozenset({"SystemOOM", "OOMKilling"})
#: the kernel's prefix for a kill inside a memory cgroup (mm/oom_kill.c, 4.19+ one-line form)
CGROUP_OOM_MARK = "Memory cgroup out of memory"
#: kubelet ``SystemOOM``: "System OOM encountered, victim process: NAME, pid: N"
_SYSTEM_OOM_PID = re.compile(r"victim process: .*, pid: (\d+)")
#: kernel (and so NPD ``OOMKilling``): "... Killed process N (NAME) total-vm:..."
_KILLED_PID = re.compile(r"Killed process (\d+) \(")
OomKind = Literal["global", "cgroup"]


def oom_kind(event: EventInfo) -> OomKind | None:
    """``global``/``cgroup`` for an OOM-kill event, None for any other event."""
    if event.reason == "SystemOOM":
        return "global"
    if event.reason == "OOMKilling":
        return "cgroup" if CGROUP_OOM_MARK in event.message else "global"
    return None


def oom_pid(event: EventInfo) -> int | None:
    """The killed PID named in an OOM event's message, if any."""
    pattern = _SYSTEM_OOM_PID if event.reason == "SystemOOM" else _KILLED_PID
    match = pattern.search(event.message)
    return int(match.group(1)) if match else None


def count_kills(events: Iterable[EventInfo]) -> int:
    """Kills, one per PID: the kubelet's SystemOOM and NPD's OOMKilling for one kill name the
    same PID, and a PID dies once. Events naming no PID count by their ``count``."""
    pids: set[int] = set()
    unnamed = 0
    for e in events:
        pid = oom_pid(e)
        if pid is None:
            unnamed += max(e.count, 1)
        else:
            pids.add(pid)
    return len(pids) + unnamed


def _ooms(ctx: Context, kind: OomKind) -> list[EventInfo]:
    return [e for e in _events(ctx, _OOM_REASONS) if oom_kind(e) == kind]


def _events(ctx: Context, reasons: frozenset[str]) -> list[EventInfo]:
    if ctx.view is None:
        return []
    return [e for e in ctx.view.events if e.reason in reasons]


def system_oom_events(ctx: Context, t: Thresholds) -> list[Finding]:
    events = _ooms(ctx, "global")
    if not events:
        return []
    count = count_kills(events)
    return [
        Finding(
            code="SYSTEM_OOM_EVENTS",
            severity="critical",
            subject=ctx.node,
            facts=[fact("events.system_oom_count", "OOM kill events", count, "count", EVENTS)],
            params={"count": count, "last_message": events[-1].message[:200]},
        )
    ]


def cgroup_oom_events(ctx: Context, t: Thresholds) -> list[Finding]:
    events = _ooms(ctx, "cgroup")
    if not events:
        return []
    count = count_kills(events)
    return [
        Finding(
            code="CGROUP_OOM_EVENTS",
            severity="warning",
            subject=ctx.node,
            facts=[
                fact("events.cgroup_oom_count", "cgroup OOM kills", count, "count", EVENTS),
            ],
            params={"count": count, "last_message": events[-1].message[:200]},
        )
    ]


def pod_evicted_events(ctx: Context, t: Thresholds) -> list[Finding]:
    events = _events(ctx, frozenset({"Evicted"}))
    if not events:
        return []
    count = sum(max(e.count, 1) for e in events)
    pods = sorted({f"{e.namespace}/{e.involved_name}" for e in events if e.involved_kind == "Pod"})
    return [
        Finding(
            code="POD_EVICTED_EVENTS",
            severity="warning",
            subject=ctx.node,
            facts=[fact("events.evicted_count", "evictions", count, "count", EVENTS)],
            params={"count": count, "pods": ", ".join(pods[:10])},
        )
    ]


def node_memory_pressure(ctx: Context, t: Thresholds) -> list[Finding]:
    if ctx.view is None:
        return []
    for cond in ctx.view.node.conditions:
        if cond.type == "MemoryPressure" and cond.status == "True":
            src = f"k8s:node/{ctx.view.node.name}/status.conditions"
            return [
                Finding(
                    code="NODE_MEMORY_PRESSURE",
                    severity="warning",
                    subject=ctx.node,
                    facts=[
                        fact(
                            "node.condition_memory_pressure", "MemoryPressure", "True", "text", src
                        )
                    ],
                    params={"reason": cond.reason or ""},
                )
            ]
    return []


RULES = (system_oom_events, cgroup_oom_events, pod_evicted_events, node_memory_pressure)
