"""A process outside Kubernetes gets the runbook of what it is: one table
(``bot.core.remedies.runbooks``), cordon first where the restart can take the node NotReady. Before
#20 a kubelet leak and a containerd leak both got the same three steps and no word on risk."""

from __future__ import annotations

import pytest

from bot.core.diagnosis.findings import Diagnosis, Ledger, Verdict
from bot.core.remedies.relief import runbook_plan
from bot.core.remedies.runbooks import RUNBOOKS, runbook_for
from tests.core.analysis_builders import AT, GI, view


def _unit_verdict(unit: str) -> Diagnosis:
    verdict = Verdict(
        cause="system_process",
        subject=unit,
        shortage_bytes=8 * GI,
        params={"systemd_unit": unit, "pid": 812},
    )
    return Diagnosis(node="n1", collected_at=AT, verdict=verdict, ledger=Ledger(total_bytes=0))


@pytest.mark.parametrize(
    ("unit", "kind", "cordon"),
    [
        ("system.slice/kubelet.service", "kubelet", True),
        ("system.slice/containerd.service", "container_runtime", True),
        ("system.slice/crio.service", "container_runtime", True),
        ("system.slice/nvidia-persistenced.service", "gpu_persistence", False),
        ("system.slice/nvidia-dcgm.service", "dcgm", False),
        ("system.slice/nv-hostengine.service", "dcgm", False),
        ("system.slice/systemd-journald.service", "journald", False),
        ("system.slice/td-agent.service", "log_agent", False),
        ("system.slice/fluent-bit.service", "log_agent", False),
        ("system.slice/backup-agent.service", "other", False),
    ],
)
def test_each_unit_gets_the_runbook_of_its_kind(unit: str, kind: str, cordon: bool) -> None:
    plan = runbook_plan(view([]), _unit_verdict(unit))

    assert plan is not None and not plan.available and plan.steps == []
    assert runbook_for(unit).kind == kind
    assert f"runbook_{kind}" in plan.warnings
    purposes = [r.purpose for r in plan.runbook]
    assert all(r.unit == unit for r in plan.runbook)
    if cordon:
        assert purposes[0] == "cordon" and purposes[-1] == "uncordon"
        assert plan.runbook[0].command == "kubectl cordon n1"
        assert purposes.index("restart") < len(purposes) - 1
    else:
        assert "cordon" not in purposes and purposes[-1] == "restart"


def test_an_unknown_unit_is_checked_for_dependants_before_its_restart() -> None:
    plan = runbook_plan(view([]), _unit_verdict("system.slice/backup-agent.service"))
    assert plan is not None
    commands = [r.command for r in plan.runbook]
    assert "systemctl list-dependencies --reverse system.slice/backup-agent.service" in commands


def test_the_table_names_each_unit_once() -> None:
    names = [n for r in RUNBOOKS for n in r.names]
    assert len(names) == len(set(names))
