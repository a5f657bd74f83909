"""Event rules: system OOM, evictions, MemoryPressure condition."""

from __future__ import annotations

import pytest
from analysis_builders import bundle, context, view

from bot.core.cluster import Condition, EventInfo, NodeInfo
from bot.core.rules import events
from bot.core.thresholds import DEFAULT


def _event(reason: str, count: int = 1) -> EventInfo:
    return EventInfo(
        namespace="ml",
        involved_kind="Pod" if reason == "Evicted" else "Node",
        involved_name="p",
        reason=reason,
        count=count,
    )


@pytest.mark.parametrize(
    ("reasons", "codes"),
    [
        (["SystemOOM"], ["SYSTEM_OOM_EVENTS"]),
        (["OOMKilling", "SystemOOM"], ["SYSTEM_OOM_EVENTS"]),
        (["Evicted"], ["POD_EVICTED_EVENTS"]),
        (["Scheduled"], []),
    ],
)
def test_event_rules(reasons: list[str], codes: list[str]) -> None:
    ctx = context(bundle(), view([], events=[_event(r) for r in reasons]))
    found = [*events.system_oom_events(ctx, DEFAULT), *events.pod_evicted_events(ctx, DEFAULT)]
    assert [f.code for f in found] == codes


def test_oom_event_counts_add_up() -> None:
    ctx = context(bundle(), view([], events=[_event("SystemOOM", 3), _event("OOMKilling", 2)]))
    assert events.system_oom_events(ctx, DEFAULT)[0].params["count"] == 5


@pytest.mark.parametrize(("status", "fires"), [("True", True), ("False", False)])
def test_memory_pressure_condition(status: str, fires: bool) -> None:
    node = NodeInfo(name="n1", conditions=[Condition(type="MemoryPressure", status=status)])
    assert (
        bool(events.node_memory_pressure(context(bundle(), view([], node=node)), DEFAULT)) is fires
    )
