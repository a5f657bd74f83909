"""The slab-leak chart with its Prometheus history: the leak is a growing band, the kernel's
global OOM kill a marker; the image lands in test-artifacts/slab-leak-history-chart.png."""

from __future__ import annotations

import io
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from pathlib import Path

import pytest
from matplotlib import image as mpimg

from bot.cli.diagnose import diagnose_node
from bot.config import KubeSettings
from bot.core.diagnosis.findings import Diagnosis
from bot.core.model.thresholds import DEFAULT
from bot.core.reporting.charts import chart_spec
from bot.kube.gateway import Gateway
from bot.prom.client import PrometheusClient
from bot.prom.history import HistoryService
from gpunode_sandbox.kubesim import KubeSim
from gpunode_sandbox.kubesim.access import BOT_TOKEN
from tests.prom.histories import PLANTED, RunningPrometheus

pytestmark = pytest.mark.slow
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"


async def test_the_slab_leak_chart_stacks_the_growing_slab_and_marks_the_oom_kill(
    make_kubesim: Callable[..., Awaitable[KubeSim]], prometheus: RunningPrometheus
) -> None:
    sim = await make_kubesim("slab-leak")
    gw = Gateway.from_settings(
        KubeSettings(
            mode="server",
            server=sim.url,
            token=BOT_TOKEN,
            verify_tls=False,
            namespace="gpunode",
            job_timeout_s=20,
        )
    )
    history = HistoryService(
        PrometheusClient(prometheus.url, timeout_s=10), window_s=6 * 3600, step_s=60, timeout_s=10
    )
    ARTIFACTS.mkdir(exist_ok=True)
    path = ARTIFACTS / "slab-leak-history-chart.png"
    try:
        out = await diagnose_node(
            gw,
            "gpu-node-01",
            "json",
            thresholds=DEFAULT,
            now=datetime.fromtimestamp(prometheus.now_s, UTC),
            history=history,
            chart=str(path),
            locale="en",
        )
    finally:
        await history.close()
        gw.close()
    spec = chart_spec(Diagnosis.model_validate_json(out))
    assert spec.source == "prometheus"
    slab = next(s for s in spec.host if s.key == PLANTED["slab_leak"].series_key)
    assert len(slab.values_gib) >= 300  # 6 h at 60 s
    assert slab.values_gib[-1] - slab.values_gib[0] > 100  # +28.8 GiB/h for 5 h
    assert spec.host_keys()[-1] == "node:other"
    assert ("oom_kill", "global OOM kill python") in [(m.kind, m.label) for m in spec.markers]
    img = mpimg.imread(io.BytesIO(path.read_bytes()), format="png")
    assert img.shape[:2] == (600, 1000)
