"""One diagnosis builds the cluster view once (after the Job, so it shows the pods as the
evidence found them), reads the node twice (to answer an unknown node before opening an
incident, then fresh in the view; the Job reuses the first read) and reads the incident back
from the store once (after the Job, for the root line's final state). A later diagnosis
finds the incident's pinned state messages by key, never by reading the timeline.

Counted where the reads land: requests at the Kubernetes stand-in (``KubeSim.requests``, the
real gateway over HTTP with the bot's token) and ``get_incident`` calls on the real store.
A diagnosis once built the view twice, read the node three times and the
incident three times.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs

from bot.config import KubeSettings
from bot.core.model.clusters import DEFAULT_CLUSTER, NodeRef
from bot.core.model.thresholds import DEFAULT
from bot.kube.gateway import Gateway
from bot.services.clusters import ClusterRegistry
from bot.services.diagnose import DiagnoseService
from bot.store.storing import Store
from gpunode_sandbox.kubesim import KubeSim
from gpunode_sandbox.kubesim.access import BOT_TOKEN
from tests.services.fakes import FakeChat
from tests.services.presenting import RecordingPresenter

NODE = "gpu-node-01"
AT = NodeRef(cluster=DEFAULT_CLUSTER, node=NODE)


class CountingStore(Store):
    """The real store, counting incident and timeline reads."""

    incident_reads = 0
    timeline_reads = 0

    async def get_incident(self, incident_id: str) -> Any:
        type(self).incident_reads += 1
        return await super().get_incident(incident_id)

    async def timeline(self, incident_id: str) -> Any:
        type(self).timeline_reads += 1
        return await super().timeline(incident_id)


def _node_reads(sim: KubeSim) -> int:
    return sum(1 for m, path, _ in sim.requests if m == "GET" and path == f"/api/v1/nodes/{NODE}")


def _views_built(sim: KubeSim) -> int:
    """Listings of the node's pods (each cluster view makes exactly one)."""
    return sum(
        1
        for m, path, query in sim.requests
        if m == "GET"
        and path == "/api/v1/pods"
        and any(f"spec.nodeName={NODE}" in s for s in parse_qs(query).get("fieldSelector", []))
    )


async def test_one_diagnosis_builds_the_view_once_and_reads_the_incident_once(
    make_kubesim: Callable[..., Awaitable[KubeSim]], tmp_path: Path
) -> None:
    sim = await make_kubesim("seed")
    gateway = Gateway.from_settings(
        KubeSettings(
            mode="server",
            server=sim.url,
            token=BOT_TOKEN,
            verify_tls=False,
            namespace="gpunode",
            job_timeout_s=20,
        )
    )
    CountingStore.incident_reads = CountingStore.timeline_reads = 0
    store = await CountingStore.open(str(tmp_path / "gpunode.db"))
    chat = FakeChat()
    service = DiagnoseService(
        ClusterRegistry.single(gateway),
        store,
        chat,
        thread=RecordingPresenter(chat),
        clock=lambda: datetime.now(UTC),
        thresholds=DEFAULT,
    )
    try:
        sim.requests.clear()
        outcome = await service.diagnose(AT, channel="C0INCIDENT", user="UREQ")
        assert outcome.error is None and outcome.diagnosis is not None, outcome.error
        counted = (_views_built(sim), _node_reads(sim), CountingStore.incident_reads)
        assert outcome.incident_id is not None
        pinned = await store.state_messages(outcome.incident_id)
        again = await service.diagnose(AT, channel="C0INCIDENT", user="UREQ", fresh=True)
        assert again.error is None and again.incident_id == outcome.incident_id
        kept = await store.state_messages(outcome.incident_id)
    finally:
        await store.close()
        gateway.close()
    assert counted == (1, 2, 1)
    # the second diagnosis found the pinned state by key and wrote over it, reading no
    # timeline on the way
    assert pinned and kept == pinned
    assert CountingStore.timeline_reads == 0
