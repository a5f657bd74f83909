"""Event rules: system OOM, evictions, MemoryPressure condition."""

from __future__ import annotations

import pytest

from bot.core.diagnosis.rules import events
from bot.core.model.cluster import Condition, EventInfo, NodeInfo
from bot.core.model.thresholds import DEFAULT
from tests.core.analysis_builders import bundle, context, view


def _event(reason: str, count: int = 1, message: str = "") -> EventInfo:
    return EventInfo(
        namespace="ml",
        involved_kind="Pod" if reason == "Evicted" else "Node",
        involved_name="p",
        reason=reason,
        message=message,
        count=count,
    )


def _kernel(why: str, pid: int) -> str:
    """The kernel line NPD's OOMKilling carries (mm/oom_kill.c, 4.19+)."""
    return (
        f"{why}: Killed process {pid} (python) total-vm:70231040kB, anon-rss:66060288kB, "
        "file-rss:0kB, shmem-rss:0kB, UID:1000 pgtables:131240kB oom_score_adj:968"
    )


def _system(pid: int) -> str:
    return f"System OOM encountered, victim process: python, pid: {pid}"


CGROUP = "Memory cgroup out of memory"
GLOBAL = "Out of memory"


@pytest.mark.parametrize(
    ("given", "codes"),
    [
        ([("SystemOOM", _system(7))], ["SYSTEM_OOM_EVENTS"]),
        ([("OOMKilling", _kernel(GLOBAL, 7)), ("SystemOOM", _system(7))], ["SYSTEM_OOM_EVENTS"]),
        ([("OOMKilling", _kernel(GLOBAL, 7))], ["SYSTEM_OOM_EVENTS"]),
        ([("OOMKilling", _kernel(CGROUP, 7))], ["CGROUP_OOM_EVENTS"]),
        (
            [("OOMKilling", _kernel(CGROUP, 7)), ("SystemOOM", _system(9))],
            ["SYSTEM_OOM_EVENTS", "CGROUP_OOM_EVENTS"],
        ),
        ([("Evicted", "")], ["POD_EVICTED_EVENTS"]),
        ([("Scheduled", "")], []),
    ],
)
def test_event_rules_tell_global_from_cgroup_oom_kills(
    given: list[tuple[str, str]], codes: list[str]
) -> None:
    ctx = context(bundle(), view([], events=[_event(r, message=m) for r, m in given]))
    found = [
        *events.system_oom_events(ctx, DEFAULT),
        *events.cgroup_oom_events(ctx, DEFAULT),
        *events.pod_evicted_events(ctx, DEFAULT),
    ]
    assert [f.code for f in found] == codes


@pytest.mark.parametrize(
    ("given", "kills"),
    [
        # the kubelet and NPD report the same kill: one PID, one kill
        ([("SystemOOM", _system(7), 1), ("OOMKilling", _kernel(GLOBAL, 7), 1)], 1),
        # an aggregated event for one PID is still one kill
        ([("SystemOOM", _system(7), 2)], 1),
        ([("SystemOOM", _system(7), 1), ("SystemOOM", _system(8), 1)], 2),
        # without a PID (old kubelets: "System OOM encountered") the event count is all we have
        ([("SystemOOM", "System OOM encountered", 3), ("OOMKilling", _kernel(GLOBAL, 7), 1)], 4),
    ],
)
def test_global_oom_kills_count_each_pid_once(
    given: list[tuple[str, str, int]], kills: int
) -> None:
    ctx = context(bundle(), view([], events=[_event(r, c, m) for r, m, c in given]))
    assert events.system_oom_events(ctx, DEFAULT)[0].params["count"] == kills


@pytest.mark.parametrize(("status", "fires"), [("True", True), ("False", False)])
def test_memory_pressure_condition(status: str, fires: bool) -> None:
    node = NodeInfo(name="n1", conditions=[Condition(type="MemoryPressure", status=status)])
    assert (
        bool(events.node_memory_pressure(context(bundle(), view([], node=node)), DEFAULT)) is fires
    )
