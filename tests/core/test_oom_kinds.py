"""A cgroup-limit OOM kill (NPD's OOMKilling "Memory cgroup out of memory") is not a global
OOM: it never marks the node pressured, while a real global OOM does."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from bot.core.model.cluster import ClusterView, EventInfo
from bot.core.model.evidence import EvidenceBundle
from bot.core.reporting.analysis import analyze

BUNDLES = Path(__file__).resolve().parents[1] / "fixtures" / "bundles"
NOW = datetime(2026, 3, 14, 9, 31, tzinfo=UTC)
LINE = (
    "{why}: Killed process 4242 (python) total-vm:9000000kB, anon-rss:8000000kB, file-rss:0kB, "
    "shmem-rss:0kB, UID:1000 pgtables:20000kB oom_score_adj:900"
)


def _healthy_with(event: EventInfo) -> tuple[str, set[str]]:
    bundle = EvidenceBundle.model_validate_json((BUNDLES / "healthy" / "evidence.json").read_text())
    view = ClusterView.model_validate_json((BUNDLES / "healthy" / "cluster.json").read_text())
    view = view.model_copy(update={"events": [*view.events, event]})
    d = analyze(bundle, view, now=NOW)
    return d.verdict.cause, {f.code for f in d.findings}


def _npd(why: str) -> EventInfo:
    return EventInfo(
        namespace="default",
        involved_kind="Node",
        involved_name="gpu-node-01",
        reason="OOMKilling",
        type="Warning",
        message=LINE.format(why=why),
    )


def test_a_cgroup_oom_kill_on_a_healthy_node_leaves_it_healthy() -> None:
    cause, codes = _healthy_with(_npd("Memory cgroup out of memory"))
    assert "CGROUP_OOM_EVENTS" in codes and "SYSTEM_OOM_EVENTS" not in codes
    assert cause == "healthy"


@pytest.mark.parametrize(
    "event",
    [
        _npd("Out of memory"),
        EventInfo(
            namespace="default",
            involved_kind="Node",
            involved_name="gpu-node-01",
            reason="SystemOOM",
            type="Warning",
            message="System OOM encountered, victim process: python, pid: 4242",
        ),
    ],
)
def test_a_global_oom_kill_marks_the_node_pressured(event: EventInfo) -> None:
    cause, codes = _healthy_with(event)
    assert "SYSTEM_OOM_EVENTS" in codes
    assert cause != "healthy"
