"""A whole diagnosis with history: stand-in cluster + real collector + real Prometheus.

The slab-leak scenario's node ``gpu-node-01`` has the planted slab-leak history in Prometheus
(``histories.PLANTED["slab_leak"]``) and a global OOM kill in its kernel log. The report must
quote both: the growth rate with its start, and the kernel's record of the kill. An
unreachable Prometheus must cost a gap, not the diagnosis, and not more than its timeout.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from pathlib import Path

import pytest

from bot.cli.diagnose import diagnose_node
from bot.config import KubeSettings
from bot.core.model.thresholds import DEFAULT
from bot.kube.gateway import Gateway
from bot.prom.client import PrometheusClient
from bot.prom.history import HistoryService
from gpunode_sandbox.kubesim import KubeSim
from gpunode_sandbox.kubesim.access import BOT_TOKEN
from tests.prom.histories import PLANTED, RunningPrometheus

pytestmark = pytest.mark.slow
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"


def _gateway(sim: KubeSim) -> Gateway:
    settings = KubeSettings(
        mode="server",
        server=sim.url,
        token=BOT_TOKEN,  # the bot diagnoses with its own deployed rights
        verify_tls=False,
        namespace="gpunode",
        job_timeout_s=20,
    )
    return Gateway.from_settings(settings)


async def _report(sim: KubeSim, url: str, now: datetime, *, timeout_s: float = 10) -> str:
    gw = _gateway(sim)
    client = PrometheusClient(url, timeout_s=timeout_s)
    history = HistoryService(client, window_s=6 * 3600, step_s=60, timeout_s=timeout_s)
    try:
        return await diagnose_node(
            gw, "gpu-node-01", "text", thresholds=DEFAULT, now=now, history=history, locale="en"
        )
    finally:
        await history.close()
        gw.close()


async def test_the_report_quotes_the_growth_rate_and_the_oom_record(
    make_kubesim: Callable[..., Awaitable[KubeSim]], prometheus: RunningPrometheus
) -> None:
    sim = await make_kubesim("slab-leak")
    text = await _report(sim, prometheus.url, datetime.now(UTC))  # the TSDB ends at now_s
    ARTIFACTS.mkdir(exist_ok=True)
    (ARTIFACTS / "slab-leak-with-history.txt").write_text(text, encoding="utf-8")
    planted = PLANTED["slab_leak"]
    assert f"has been growing {planted.rate_gib_per_h} GiB/h since" in text, text
    planted_at = prometheus.now_s - (planted.since_ago_s or 0)
    near = {
        datetime.fromtimestamp(planted_at + d, UTC).strftime("since %H:%M UTC")
        for d in range(-120, 121, 60)
    }
    assert any(s in text for s in near), near
    assert "the node runs out of memory in" in text
    assert "The global OOM killer killed `python` (PID 2210000) of ml-train/train-llm-0" in text
    assert "critical MEMORY_GROWTH" in text  # runs out within hours
    assert f"It has been growing {planted.rate_gib_per_h} GiB/h since" in text  # the verdict


async def test_an_unreachable_prometheus_is_a_gap_and_costs_at_most_its_timeout(
    make_kubesim: Callable[..., Awaitable[KubeSim]],
) -> None:
    sim = await make_kubesim("slab-leak")
    started = time.monotonic()
    text = await _report(sim, "http://127.0.0.1:9", datetime.now(UTC), timeout_s=2)
    assert "cannot reach Prometheus at http://127.0.0.1:9" in text
    assert "KERNEL_SLAB" in text or "unreclaimable slab" in text
    assert time.monotonic() - started < 30  # the Job itself takes a few seconds
