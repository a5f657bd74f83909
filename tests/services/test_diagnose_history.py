"""The diagnose use-case with a history source: Prometheus is asked while the Job runs, and a
slow Prometheus costs at most its timeout and a gap."""

from __future__ import annotations

import asyncio
import time
from datetime import datetime
from pathlib import Path

from bot.core.model.cluster import NodeInfo
from bot.core.model.evidence import EvidenceBundle
from bot.core.model.thresholds import DEFAULT
from bot.prom.client import Sample
from bot.prom.history import HistoryService
from bot.services.clusters import ClusterRegistry
from bot.services.diagnose import DiagnoseService
from tests.services.world import AT, CHANNEL, REQ, make_world

JOB_S = 0.4


class SlowJob:
    """Wraps the world's fake cluster: the diagnostic Job takes JOB_S and is timed."""

    def __init__(self, kube: object) -> None:
        self._kube = kube
        self.job: tuple[float, float] | None = None

    def __getattr__(self, name: str) -> object:
        return getattr(self._kube, name)

    async def run_diagnostic(self, node: str, *, known: NodeInfo | None = None) -> EvidenceBundle:
        started = time.monotonic()
        await asyncio.sleep(JOB_S)
        bundle: EvidenceBundle = await self._kube.run_diagnostic(node, known=known)  # type: ignore[attr-defined]
        self.job = (started, time.monotonic())
        return bundle


class TimedPrometheus:
    """A RangeQuerier that answers after ``delay_s`` with one flat series, noting when asked."""

    def __init__(self, delay_s: float) -> None:
        self.delay_s = delay_s
        self.asked: list[float] = []

    async def query_range(
        self, expr: str, *, start: datetime, end: datetime, step_s: float
    ) -> list[Sample]:
        self.asked.append(time.monotonic())
        await asyncio.sleep(self.delay_s)
        ts = start.timestamp()
        return [Sample({"namespace": "ml", "pod": "p"}, [(ts + i * 60, 1.0) for i in range(10)])]


async def _service(tmp_path: Path, prom: TimedPrometheus, timeout_s: float):  # type: ignore[no-untyped-def]
    world = await make_world(tmp_path / "gpunode.db")
    kube = SlowJob(world.kube)
    history = HistoryService(prom, timeout_s=timeout_s)
    service = DiagnoseService(
        ClusterRegistry.single(kube),  # type: ignore[arg-type]
        world.store,
        world.chat,
        thread=world.thread,
        clock=world.clock,
        thresholds=DEFAULT,
        history=history,
    )
    return world, kube, service


async def test_prometheus_is_asked_while_the_diagnostic_job_runs(tmp_path: Path) -> None:
    prom = TimedPrometheus(delay_s=0.1)
    world, kube, service = await _service(tmp_path, prom, timeout_s=3)
    try:
        outcome = await service.diagnose(AT, channel=CHANNEL, user=REQ)
    finally:
        await world.store.close()
    assert outcome.diagnosis is not None and kube.job is not None
    assert prom.asked and min(prom.asked) < kube.job[1]  # before the Job ended, not after
    history = outcome.diagnosis.history
    assert history is not None and history.source == "prometheus"
    assert history.get("pod:ml/p") is not None


async def test_a_slow_prometheus_costs_its_timeout_and_a_gap_not_the_diagnosis(
    tmp_path: Path,
) -> None:
    # a Prometheus that never answers within the test's life: the diagnosis can only finish
    # because the query was given up after its timeout (no wall-clock bound to race the load)
    prom = TimedPrometheus(delay_s=3600)
    world, _kube, service = await _service(tmp_path, prom, timeout_s=0.5)
    try:
        outcome = await service.diagnose(AT, channel=CHANNEL, user=REQ)
    finally:
        await world.store.close()
    assert prom.asked, "the history was asked for"
    assert outcome.diagnosis is not None
    assert any(
        g.source == "prometheus" and "did not answer within 0.5 s" in g.reason
        for g in outcome.diagnosis.unverified
    )
