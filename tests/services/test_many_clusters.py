"""One bot, several clusters, against real Kubernetes stand-ins over HTTP: `top` ranks across
clusters, concurrently; a stopped or hung cluster is named and never holds up the others;
diagnoses and alerts land in the right cluster's incident."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import UTC, datetime
from pathlib import Path

import pytest

from bot.config import KubeSettings
from bot.core.model.clusters import NodeRef
from bot.core.model.thresholds import DEFAULT
from bot.errors import UnknownClusterError
from bot.kube.gateway import Gateway
from bot.services.alerts import AlertService, parse_payload
from bot.services.background import Background
from bot.services.clusters import ClusterRegistry
from bot.services.diagnose import DiagnoseService
from bot.services.operations import top_across
from bot.services.ports import KubePort
from bot.store.storing import Store
from gpunode_sandbox.kubesim import KubeSim
from gpunode_sandbox.kubesim.access import BOT_TOKEN
from tests.services.fakes import FakeChat
from tests.services.presenting import RecordingPresenter

MakeSim = Callable[..., Awaitable[KubeSim]]
T0 = datetime(2026, 3, 14, 9, 30, tzinfo=UTC)
#: the timeout given to a cluster that will not answer in time; the stand-in's delay is far
#: longer, so a fan-out that waited for it would take DELAY_S, not about SHORT_TIMEOUT_S
SHORT_TIMEOUT_S = 1.0
DELAY_S = 60.0
#: a generous bound for "about the timeout, not the delay" on a loaded 2-core machine
BOUND_S = 20.0


def gateway(url: str, *, timeout_s: float = 10.0) -> Gateway:
    return Gateway.from_settings(
        KubeSettings(
            mode="server",
            server=url,
            token=BOT_TOKEN,
            verify_tls=False,
            namespace="gpunode",
            request_timeout_s=timeout_s,
        )
    )


def registry(urls: dict[str, str], timeouts: dict[str, float] | None = None) -> ClusterRegistry:
    t = timeouts or {}

    def builder(url: str, name: str) -> Callable[[], KubePort]:
        return lambda: gateway(url, timeout_s=t.get(name, 10.0))

    return ClusterRegistry({n: builder(u, n) for n, u in urls.items()}, timeouts=t)


@pytest.fixture
async def two(make_kubesim: MakeSim) -> AsyncIterator[tuple[KubeSim, KubeSim, ClusterRegistry]]:
    eu, us = await asyncio.gather(make_kubesim("seed"), make_kubesim("slab-leak"))
    reg = registry({"prod-eu": eu.url, "prod-us": us.url})
    yield eu, us, reg
    reg.close()


async def test_top_ranks_both_clusters_nodes_together_and_names_each_rows_cluster(
    two: tuple[KubeSim, KubeSim, ClusterRegistry],
) -> None:
    eu, us, reg = two
    report = await top_across(reg)

    assert report.failures == []
    assert sorted((r.cluster, r.node) for r in report.rows) == [
        ("prod-eu", "gpu-node-01"),
        ("prod-eu", "gpu-node-02"),
        ("prod-us", "gpu-node-01"),
    ]
    scores = [r.score for r in report.rows]
    assert scores == sorted(scores, reverse=True)
    # each cluster was asked over its own API server
    assert any("/api/v1/nodes" in path for _m, path, _q in eu.requests)
    assert any("/api/v1/nodes" in path for _m, path, _q in us.requests)


async def test_top_of_one_named_cluster_asks_only_that_cluster(
    two: tuple[KubeSim, KubeSim, ClusterRegistry],
) -> None:
    eu, _us, reg = two
    before = len(eu.requests)
    report = await top_across(reg, cluster="prod-us")
    assert {r.cluster for r in report.rows} == {"prod-us"}
    assert len(eu.requests) == before
    with pytest.raises(UnknownClusterError, match="knows are: prod-eu, prod-us"):
        await top_across(reg, cluster="prod-ap")


class BlackHole:
    """A TCP server that accepts connections and never answers (a hung API server)."""

    def __init__(self) -> None:
        self.writers: list[asyncio.StreamWriter] = []
        self.server: asyncio.Server | None = None

    async def start(self) -> str:
        async def swallow(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            self.writers.append(writer)
            await reader.read(-1)

        self.server = await asyncio.start_server(swallow, "127.0.0.1", 0)
        return f"http://127.0.0.1:{self.server.sockets[0].getsockname()[1]}"

    async def stop(self) -> None:
        assert self.server is not None
        self.server.close()
        for writer in self.writers:
            writer.close()
        await self.server.wait_closed()


@pytest.mark.parametrize("how", ["stopped", "delaying", "hung"])
async def test_an_unreachable_or_slow_cluster_is_named_and_the_others_rows_come_within_its_timeout(
    make_kubesim: MakeSim, how: str
) -> None:
    eu = await make_kubesim("seed")
    hole: BlackHole | None = None
    if how == "stopped":
        us = await make_kubesim("slab-leak")
        url = us.url
        await us.stop()
    elif how == "delaying":
        us = await make_kubesim("slab-leak")
        us.faults.add("*", ".", delay_s=DELAY_S, times=-1)
        url = us.url
    else:
        hole = BlackHole()
        url = await hole.start()
    reg = registry(
        {"prod-eu": eu.url, "prod-us": url}, timeouts={"prod-eu": 30.0, "prod-us": SHORT_TIMEOUT_S}
    )
    try:
        started = time.monotonic()
        report = await top_across(reg)
        elapsed = time.monotonic() - started
    finally:
        reg.close()
        if hole is not None:
            await hole.stop()

    assert {(r.cluster, r.node) for r in report.rows} == {
        ("prod-eu", "gpu-node-01"),
        ("prod-eu", "gpu-node-02"),
    }
    assert [(f.cluster, f.code) for f in report.failures] == [("prod-us", "cluster_unreachable")]
    assert report.failures[0].message.startswith("cluster prod-us could not be reached (")
    assert elapsed < BOUND_S < DELAY_S


async def test_a_slow_cluster_does_not_delay_a_diagnosis_in_another_cluster(
    make_kubesim: MakeSim, tmp_path: Path
) -> None:
    eu, us = await asyncio.gather(make_kubesim("seed"), make_kubesim("slab-leak"))
    us.faults.add("*", ".", delay_s=DELAY_S, times=-1)
    reg = registry({"prod-eu": eu.url, "prod-us": us.url}, timeouts={"prod-us": SHORT_TIMEOUT_S})
    chat = FakeChat()
    async with await Store.open(str(tmp_path / "g.db")) as store:
        service = DiagnoseService(
            reg, store, chat, thread=RecordingPresenter(chat), clock=lambda: T0, thresholds=DEFAULT
        )
        try:
            # both at once: prod-us hangs until its timeout, prod-eu's diagnosis completes
            hung, done = await asyncio.gather(
                service.diagnose(
                    NodeRef(cluster="prod-us", node="gpu-node-01"), channel="C1", user="U1"
                ),
                service.diagnose(
                    NodeRef(cluster="prod-eu", node="gpu-node-01"), channel="C1", user="U1"
                ),
            )
        finally:
            reg.close()
        incidents = await store.open_incidents()

    assert done.diagnosis is not None and done.error is None
    assert hung.error is not None and hung.error.code == "cluster_unreachable"
    assert "cluster prod-us could not be reached" in hung.error.message
    assert [(i.cluster, i.node) for i in incidents] == [("prod-eu", "gpu-node-01")]
    told = chat.ephemerals_for("U1")
    assert any("cluster prod-us could not be reached" in t for t in told)


async def test_one_node_name_in_two_clusters_is_two_incidents_each_diagnosed_in_its_cluster(
    two: tuple[KubeSim, KubeSim, ClusterRegistry], tmp_path: Path
) -> None:
    eu, us, reg = two
    chat = FakeChat()
    async with await Store.open(str(tmp_path / "g.db")) as store:
        service = DiagnoseService(
            reg, store, chat, thread=RecordingPresenter(chat), clock=lambda: T0, thresholds=DEFAULT
        )
        a = await service.diagnose(
            NodeRef(cluster="prod-eu", node="gpu-node-01"), channel="C1", user="U1"
        )
        b = await service.diagnose(
            NodeRef(cluster="prod-us", node="gpu-node-01"), channel="C1", user="U1"
        )
        incidents = {i.id: i for i in await store.open_incidents()}
        timeline = await store.timeline(b.incident_id or "")

    assert a.diagnosis is not None and b.diagnosis is not None
    assert a.incident_id != b.incident_id
    assert incidents[a.incident_id or ""].cluster == "prod-eu"
    assert incidents[b.incident_id or ""].cluster == "prod-us"
    # each diagnosis ran its Job in its own cluster, and found that cluster's story
    assert a.diagnosis.verdict.cause != b.diagnosis.verdict.cause
    assert b.diagnosis.verdict.cause == "kernel_slab"
    assert any("/jobs" in p and m == "POST" for m, p, _q in eu.requests)
    assert any("/jobs" in p and m == "POST" for m, p, _q in us.requests)
    assert {e.cluster for e in timeline} == {"prod-us"}
    roots = [m.text for m in chat.roots()]
    assert any("prod-us/gpu-node-01" in t for t in roots)


def _alert(labels: dict[str, str], fp: str) -> bytes:
    alert = {
        "status": "firing",
        "labels": {"alertname": "GpunodeMemoryAvailableLow", **labels},
        "startsAt": "2026-03-14T09:00:00Z",
        "fingerprint": fp,
    }
    return json.dumps(
        {"version": "4", "groupKey": "g", "status": "firing", "alerts": [alert]}
    ).encode()


@pytest.mark.parametrize(
    ("label", "labels", "diagnosing", "refused"),
    [
        ("cluster", {"node": "gpu-node-01", "cluster": "prod-us"}, ["prod-us/gpu-node-01"], []),
        ("cluster", {"node": "gpu-node-01"}, ["prod-eu/gpu-node-01"], []),  # the default
        (
            "k8s_cluster",
            {"node": "gpu-node-01", "k8s_cluster": "prod-us"},
            ["prod-us/gpu-node-01"],
            [],
        ),
        (
            "cluster",
            {"node": "gpu-node-01", "cluster": "prod-ap"},
            [],
            ["no cluster named 'prod-ap'; the clusters gpunode knows are: prod-eu, prod-us"],
        ),
        (
            "cluster",
            {"node": "gpu-node-01", "cluster": "Prod_US"},
            [],
            ["label cluster: 'Prod_US' is not a valid cluster name"],
        ),
    ],
)
async def test_the_alert_intake_takes_the_cluster_from_its_label(
    two: tuple[KubeSim, KubeSim, ClusterRegistry],
    tmp_path: Path,
    label: str,
    labels: dict[str, str],
    diagnosing: list[str],
    refused: list[str],
) -> None:
    _eu, _us, reg = two
    chat, bg = FakeChat(), Background()
    async with await Store.open(str(tmp_path / "g.db")) as store:
        service = DiagnoseService(
            reg, store, chat, thread=RecordingPresenter(chat), clock=lambda: T0, thresholds=DEFAULT
        )
        alerts = AlertService(
            service,
            store,
            chat,
            bg,
            channel="C1",
            clock=lambda: T0,
            check_nodes=True,
            cluster_label=label,
        )
        result = await alerts.intake(parse_payload(_alert(labels, "fp1")))
        await bg.drain(timeout_s=60)
        incidents = await store.open_incidents()
        audit = await store.audit_since()

    assert result.diagnosing == diagnosing
    assert [r["reason"][: len(w)] for r, w in zip(result.refused, refused, strict=True)] == refused
    assert [f"{i.cluster}/{i.node}" for i in incidents] == diagnosing
    if refused:
        assert [a.decision for a in audit] == ["refused"]
        assert audit[0].outcome in ("unknown_cluster", "invalid_cluster_label")


async def test_alerts_for_an_unreachable_cluster_are_refused_and_the_others_go_ahead(
    make_kubesim: MakeSim, tmp_path: Path
) -> None:
    eu, us = await asyncio.gather(make_kubesim("seed"), make_kubesim("slab-leak"))
    us_url = us.url
    await us.stop()
    reg = registry({"prod-eu": eu.url, "prod-us": us_url}, timeouts={"prod-us": SHORT_TIMEOUT_S})
    chat, bg = FakeChat(), Background()
    body = json.dumps(
        {
            "version": "4",
            "groupKey": "g",
            "status": "firing",
            "alerts": [
                json.loads(_alert({"node": "gpu-node-01", "cluster": c}, f"fp-{c}"))["alerts"][0]
                for c in ("prod-eu", "prod-us")
            ],
        }
    ).encode()
    async with await Store.open(str(tmp_path / "g.db")) as store:
        service = DiagnoseService(
            reg, store, chat, thread=RecordingPresenter(chat), clock=lambda: T0, thresholds=DEFAULT
        )
        alerts = AlertService(
            service, store, chat, bg, channel="C1", clock=lambda: T0, check_nodes=True
        )
        try:
            result = await alerts.intake(parse_payload(body))
            await bg.drain(timeout_s=60)
        finally:
            reg.close()

    assert result.diagnosing == ["prod-eu/gpu-node-01"]
    assert [r["node"] for r in result.refused] == ["prod-us/gpu-node-01"]
    assert result.refused[0]["reason"].startswith("cluster prod-us could not be reached")
