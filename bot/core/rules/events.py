"""Event and node-condition rules: what already went wrong.

Codes:

- ``SYSTEM_OOM_EVENTS`` (critical): node events ``SystemOOM`` / ``OOMKilling`` (the kernel's
  global OOM killer ran: the kubelet did not evict in time, or could not see the memory).
- ``POD_EVICTED_EVENTS`` (warning): ``Evicted`` events (kubelet node-pressure eviction).
- ``NODE_MEMORY_PRESSURE`` (warning): the node condition ``MemoryPressure`` is True.
"""

from __future__ import annotations

from bot.core.cluster import EventInfo
from bot.core.findings import Finding
from bot.core.rules.context import EVENTS, Context, fact
from bot.core.thresholds import Thresholds

_OOM_REASONS = frozenset({"SystemOOM", "OOMKilling"})


def _events(ctx: Context, reasons: frozenset[str]) -> list[EventInfo]:
    if ctx.view is None:
        return []
    return [e for e in ctx.view.events if e.reason in reasons]


def system_oom_events(ctx: Context, t: Thresholds) -> list[Finding]:
    events = _events(ctx, _OOM_REASONS)
    if not events:
        return []
    count = sum(max(e.count, 1) for e in events)
    return [
        Finding(
            code="SYSTEM_OOM_EVENTS",
            severity="critical",
            subject=ctx.node,
            facts=[fact("events.system_oom_count", "OOM kill events", count, "count", EVENTS)],
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


RULES = (system_oom_events, pod_evicted_events, node_memory_pressure)
