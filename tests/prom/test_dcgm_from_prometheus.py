"""The third GPU-evidence rung through a real Prometheus: on a MIG node whose dcgm-exporter
has no endpoint the bot can find (no Service), the per-pod figures come from Prometheus, under
the ``exported_*`` labels a Prometheus without honorLabels writes; the whole diagnosis runs as
``gpunode diagnose`` does (stand-in cluster, real collector, real HTTP), and the report's gap
says which rungs failed and where the figures came from."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import UTC, datetime

import pytest

from bot.cli.diagnose import diagnose_node
from bot.config import KubeSettings
from bot.core.model.thresholds import DEFAULT
from bot.kube.gateway import Gateway
from bot.prom.client import PrometheusClient
from bot.prom.history import HistoryService
from gpunode_sandbox.kubesim import KubeSim, load_scenario
from gpunode_sandbox.kubesim.access import BOT_TOKEN
from tests.prom.histories import DCGM_PODS, RunningPrometheus

pytestmark = pytest.mark.slow


async def _report(sim: KubeSim, history: HistoryService) -> str:
    settings = KubeSettings(
        mode="server",
        server=sim.url,
        token=BOT_TOKEN,
        verify_tls=False,
        namespace="gpunode",
        job_timeout_s=30,
    )
    gw = Gateway.from_settings(settings)
    try:
        return await diagnose_node(
            gw,
            "mig-node-01",
            "text",
            thresholds=DEFAULT,
            now=datetime.now(UTC),
            history=history,
            locale="en",
        )
    finally:
        await history.close()
        gw.close()


def _without_exporter() -> object:
    scenario = load_scenario("gpu-mig-mixed")
    nodes = [n.model_copy(update={"dcgm_exporter": None}) for n in scenario.nodes]
    return scenario.model_copy(update={"nodes": nodes})


async def test_a_mig_nodes_pod_gpu_memory_comes_from_prometheus_when_no_endpoint_is_found(
    make_kubesim: Callable[..., Awaitable[KubeSim]], prometheus: RunningPrometheus
) -> None:
    sim = await make_kubesim(_without_exporter())
    history = HistoryService(PrometheusClient(prometheus.url, timeout_s=10), timeout_s=10)
    text = " ".join((await _report(sim, history)).split())  # the report wraps long gaps
    assert "MIG monitor capability" in text
    assert "dcgm-exporter via the exporter's endpoint: no Service named" in text
    named = ", ".join(f"serving/{pod} {used / 1024:.1f} GiB" for pod, _, used in DCGM_PODS)
    assert f"dcgm-exporter via Prometheus (2 pods: {named})" in text, text
    assert "nvidia-dcgm-exporter-7xk2p" not in text  # the scrape target is not a GPU pod


async def test_without_prometheus_the_gap_says_it_was_not_asked(
    make_kubesim: Callable[..., Awaitable[KubeSim]],
) -> None:
    sim = await make_kubesim(_without_exporter())
    text = " ".join((await _report(sim, HistoryService(None))).split())
    assert "dcgm-exporter via the exporter's endpoint: no Service named" in text
    assert "dcgm-exporter via Prometheus: not asked: prometheus.url is not set" in text
