"""The kernel's record end to end: scenario kmsg -> real collector -> gateway -> analysis -> text.

The stand-in writes each node's ``/dev/kmsg`` in the kernel's and the NVIDIA driver's formats;
the real collector reads it like the device, and the analysis turns it into findings (and, for
a lost GPU, the verdict).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from bot.cli.diagnose import render_output
from bot.core.model.thresholds import DEFAULT
from bot.core.reporting.analysis import analyze
from bot.render.sentences import sentence

pytestmark = pytest.mark.slow
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"


async def _diagnose(make_gateway: Callable[..., Awaitable[tuple[Any, Any]]], scenario: str) -> Any:
    gw, _sim = await make_gateway(scenario)
    bundle = await gw.run_diagnostic("gpu-node-01")
    view = await gw.get_cluster_view("gpu-node-01")
    return bundle, analyze(bundle, view, thresholds=DEFAULT, now=datetime.now(UTC))


async def test_a_lost_gpu_in_the_kernel_log_is_the_verdict_not_memory(
    make_gateway: Callable[..., Awaitable[tuple[Any, Any]]],
) -> None:
    bundle, diagnosis = await _diagnose(make_gateway, "gpu-xid")
    assert bundle.kernel_log is not None
    xids = {(x.code, x.gpu_index) for x in bundle.kernel_log.xids}
    assert xids == {(79, 3), (45, 3)}
    gpu3 = next(g for g in bundle.gpus if g.index == 3)
    assert all(x.gpu_uuid == gpu3.uuid for x in bundle.kernel_log.xids)
    assert diagnosis.verdict.cause == "gpu_xid"
    text = sentence(
        "verdicts",
        "gpu_xid",
        diagnosis.verdict.params,
        fmt="text",
        subject=diagnosis.verdict.subject,
        strict=True,
        locale="en",
    )
    assert "GPU 3 raised XID 79 (fallen off the bus)" in text and "hardware" in text
    finding = next(f for f in diagnosis.findings if f.code == "GPU_XID" and f.params["code"] == 79)
    line = sentence("findings", "GPU_XID", finding.params, fmt="text", strict=True, locale="en")
    assert "a hardware fault, not memory" in line
    report = render_output(diagnosis, "text", bundle=bundle, locale="en")
    ARTIFACTS.mkdir(exist_ok=True)
    (ARTIFACTS / "gpu-xid.txt").write_text(report, encoding="utf-8")
    assert "GPU hardware fault (XID)" in report and "XID 79" in report
    for fmt in ("markdown", "blocks", "json"):
        assert "79" in render_output(diagnosis, fmt, bundle=bundle, locale="en")
    at = bundle.kernel_log.xids[0].at
    assert at is not None and abs((datetime.now(UTC) - at).total_seconds() - 1200) < 120


async def test_the_seed_cgroup_oom_kill_names_the_pod_and_container_not_an_eviction(
    make_gateway: Callable[..., Awaitable[tuple[Any, Any]]],
) -> None:
    bundle, diagnosis = await _diagnose(make_gateway, "seed")
    assert bundle.kernel_log is not None
    (kill,) = bundle.kernel_log.oom_kills
    assert (kill.scope, kill.comm, kill.pid) == ("cgroup", "python", 2210433)
    assert kill.anon_rss_bytes == 66060288 * 1024
    finding = next(f for f in diagnosis.findings if f.code == "KERNEL_OOM_KILL")
    assert finding.subject.startswith("data-prep/preprocess-")
    assert finding.params["container"] == "pandas" and finding.params["limit_level"] == "container"
    line = sentence(
        "findings", "KERNEL_OOM_KILL", finding.params, fmt="text", strict=True, locale="en"
    )
    assert line.startswith(
        "A cgroup OOM kill, not the kubelet's eviction: the kernel killed `python`"
    )
    assert "in container pandas of data-prep/preprocess-" in line
    assert "the container hit its own memory limit" in line


@pytest.mark.parametrize(
    ("scenario", "keys"),
    [
        ("gpu-xid", {"ai.gpu_hardware_fault", "ops.gpu_hardware_fault"}),
        ("seed", {"ai.cgroup_oom_kill"}),
        ("slab-leak", {"ops.global_oom_kill"}),
    ],
)
async def test_each_team_hears_what_the_kernel_recorded(
    make_gateway: Callable[..., Awaitable[tuple[Any, Any]]], scenario: str, keys: set[str]
) -> None:
    _bundle, diagnosis = await _diagnose(make_gateway, scenario)
    points = {p.key: p for p in diagnosis.talking_points}
    assert keys <= set(points), sorted(points)
    for key in keys:
        p = points[key]
        assert p.facts and not p.unverified
        text = sentence("talking_points", key, p.params, fmt="mrkdwn", strict=True, locale="en")
        assert "UTC" in text
