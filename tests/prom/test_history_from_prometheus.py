"""gpunode's real Prometheus client and history service against a real Prometheus.

Each scenario shape is planted in the TSDB (``histories.PLANTED``); the change point and rate
gpunode finds must match the planted ones within a tolerance (one query step for time, 5%
for rates), and what is not scraped must be a gap.
"""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from bot.core.diagnosis.history import growth_of
from bot.prom.client import PrometheusClient
from bot.prom.history import HistoryService
from tests.prom.histories import GI, PLANTED, RunningPrometheus

pytestmark = pytest.mark.slow
STEP_S = 60


async def _history(prometheus: RunningPrometheus, node: str):  # type: ignore[no-untyped-def]
    client = PrometheusClient(prometheus.url, timeout_s=10)
    try:
        service = HistoryService(client, window_s=6 * 3600, step_s=STEP_S, timeout_s=10)
        history = await service.fetch(node, now=datetime.fromtimestamp(prometheus.now_s, UTC))
    finally:
        await client.close()
    assert history is not None
    return history


@pytest.mark.parametrize("shape", sorted(PLANTED))
async def test_the_planted_change_point_and_rate_are_found_again(
    prometheus: RunningPrometheus, shape: str
) -> None:
    planted = PLANTED[shape]
    history = await _history(prometheus, planted.node)
    growth = growth_of(history, planted.series_key or None)
    if planted.kind == "flat":
        assert growth is None, growth
        return
    assert growth is not None and growth.series_key == planted.series_key
    assert growth.kind == planted.kind
    if planted.since_ago_s is None:
        assert growth.before_window
    else:
        since_ago = prometheus.now_s - growth.since.timestamp()
        assert abs(since_ago - planted.since_ago_s) <= 2 * STEP_S, since_ago
    if planted.kind == "growth":
        rate = growth.rate_bytes_per_h / GI
        assert rate == pytest.approx(planted.rate_gib_per_h, rel=0.05)
        assert growth.exhaustion_s is not None and growth.exhaustion_s > 0
        assert growth.available_bytes is not None
        assert growth.exhaustion_s == pytest.approx(
            growth.available_bytes / (growth.rate_bytes_per_h / 3600), rel=1e-6
        )
    else:
        assert growth.jump_bytes / GI == pytest.approx(planted.jump_gib, rel=0.05)


async def test_pod_series_sum_containers_without_the_pod_cgroup_or_pause(
    prometheus: RunningPrometheus,
) -> None:
    history = await _history(prometheus, "creep-node")
    pods = {s.key for s in history.series if s.kind == "pod_working_set"}
    assert pods == {"pod:ml-train/loader-0", "pod:ml-train/train-0"}
    train = history.get("pod:ml-train/train-0")
    assert train is not None and train.values[-1] / GI == pytest.approx(40, abs=0.5)
    assert len(train.values) == pytest.approx(6 * 3600 / STEP_S, abs=2)


async def test_gpu_memory_xids_and_restarts_come_back_as_series_and_markers(
    prometheus: RunningPrometheus,
) -> None:
    history = await _history(prometheus, "gpu-node-01")
    gpus = [s for s in history.series if s.kind == "gpu_memory_used"]
    assert [(s.key, s.values[-1]) for s in gpus] == [("gpu:0", 64 * GI), ("gpu:1", 64 * GI)]
    marks = {(m.kind, m.subject, m.label) for m in history.markers}
    assert ("xid", "GPU 1", "XID 79") in marks
    assert ("restart", "ml-train/train-llm-0/trainer", "restart (OOMKilled)") in marks
    assert history.gaps == []


async def test_series_nobody_scrapes_are_gaps_naming_the_exporter(
    prometheus: RunningPrometheus,
) -> None:
    history = await _history(prometheus, "healthy-node")
    sources = {g.source: g.reason for g in history.gaps}
    assert "prometheus:DCGM_FI_DEV_FB_USED" in sources
    assert "dcgm-exporter" in sources["prometheus:DCGM_FI_DEV_FB_USED"]
    assert "prometheus:kube_pod_container_status_restarts_total" in sources
    assert history.get("node:mem_available") is not None
    total = history.get("node:mem_total")
    assert total is not None and total.values[-1] == 251 * GI


async def test_an_unknown_node_has_only_gaps(prometheus: RunningPrometheus) -> None:
    history = await _history(prometheus, "no-such-node")
    assert history.series == [] and len(history.gaps) == 11
