"""Kernel-log rules: OOM kills (global vs cgroup, which limit) and XIDs (lost GPU or not)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from bot.core.diagnosis.rules import kernel_log
from bot.core.diagnosis.verdicts import decide
from bot.core.model.kernel_records import KernelLog, OomKill, XidEvent
from bot.core.model.thresholds import DEFAULT
from tests.core.analysis_builders import bundle, context, meminfo

AT = datetime(2026, 12, 1, 2, 14, tzinfo=UTC)
UID = "6a1f0c2e-9d3b-4c1a-8e7f-112233445566"
CID = "b1" * 32
POD = (
    f"/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod{UID.replace('-', '_')}.slice"
)
TASK = f"{POD}/cri-containerd-{CID}.scope"


def _kill(scope: str, oom_memcg: str | None) -> OomKill:
    return OomKill(
        at=AT,
        uptime_us=1,
        scope=scope,
        pid=4242,
        comm="python",
        anon_rss_bytes=1 << 30,
        oom_memcg=oom_memcg,
        task_memcg=TASK,
        pod_uid=UID,
        container_id=CID,
    )


@pytest.mark.parametrize(
    ("scope", "oom_memcg", "level", "severity"),
    [
        ("node", None, "", "critical"),
        ("cgroup", TASK, "container", "warning"),
        ("cgroup", POD, "pod", "warning"),
        ("cgroup", "/kubepods.slice", "kubepods", "warning"),
        ("cgroup", "/kubepods", "kubepods", "warning"),
        ("cgroup", "/system.slice/docker.service", "other", "warning"),
    ],
)
def test_an_oom_kill_says_which_killer_and_which_limit(
    scope: str, oom_memcg: str | None, level: str, severity: str
) -> None:
    log = KernelLog(window_s=86400, oom_kills=[_kill(scope, oom_memcg)])
    (finding,) = kernel_log.oom_kills(
        context(bundle(meminfo=meminfo(251), kernel_log=log)), DEFAULT
    )
    assert (finding.params["limit_level"], finding.severity) == (level, severity)
    assert finding.params["killed_at"] == AT.isoformat()


def _xid(code: int, gpu: int = 3) -> XidEvent:
    return XidEvent(
        at=AT, uptime_us=1, pci_bus_id="0000:3a:00", code=code, gpu_index=gpu, gpu_uuid=f"GPU-{gpu}"
    )


@pytest.mark.parametrize(
    ("codes", "severity", "cause"),
    [
        ([79], "critical", "gpu_xid"),
        ([48], "critical", "gpu_xid"),
        ([95], "critical", "gpu_xid"),
        ([63], "warning", "healthy"),
        ([13], "info", "healthy"),
        ([45, 45], "info", "healthy"),
    ],
)
def test_only_an_xid_that_loses_the_gpu_becomes_the_verdict(
    codes: list[int], severity: str, cause: str
) -> None:
    log = KernelLog(window_s=86400, xids=[_xid(c) for c in codes])
    ctx = context(bundle(meminfo=meminfo(251, free=200, mem_available=200), kernel_log=log))
    findings = kernel_log.gpu_xids(ctx, DEFAULT)
    assert [f.severity for f in findings] == [severity]
    assert findings[0].params["count"] == len(codes)
    assert decide(ctx, findings, DEFAULT).cause == cause


def test_nothing_is_found_without_a_kernel_log() -> None:
    ctx = context(bundle(meminfo=meminfo(251)))
    assert kernel_log.oom_kills(ctx, DEFAULT) == [] and kernel_log.gpu_xids(ctx, DEFAULT) == []
