"""The metrics facade, its exposition, and the edges that report to it (Slack client,
Kubernetes transport), each against the stand-ins over real HTTP."""

from __future__ import annotations

import asyncio
import threading
import time

import aiohttp
import pytest
from prometheus_client.parser import text_string_to_metric_families

from bot.config import KubeSettings
from bot.errors import ForbiddenError, NotFoundError, SlackError
from bot.kube import jobs
from bot.kube.connecting import build_api_client
from bot.kube.gateway import Gateway
from bot.kube.observing import resource_of
from bot.kube.transport import Transport
from bot.slack.chatting import SlackChat, make_client
from bot.telemetry.metrics import EXPORTED, Metrics
from bot.telemetry.serving import listening_port, start_metrics_listener
from bot.telemetry.wiring import instrument
from gpunode_sandbox.kubesim import KubeSim
from gpunode_sandbox.kubesim.access import BOT_TOKEN as KUBE_BOT_TOKEN
from gpunode_sandbox.kubesim.access import service_account_token
from gpunode_sandbox.slacksim import SlackSim
from tests.conftest import kube_call
from tests.ports import refusing_port


def _value(m: Metrics, name: str, **labels: str) -> float:
    return m.registry.get_sample_value(name, labels) or 0.0


@pytest.mark.parametrize(
    ("path", "resource"),
    [
        ("/api/v1/nodes", "nodes"),
        ("/api/v1/nodes/gpu-node-01", "nodes"),
        ("/api/v1/namespaces/gpunode", "namespaces"),
        ("/api/v1/namespaces/gpunode/pods", "pods"),
        ("/api/v1/namespaces/gpunode/pods/p-1/log", "pods/log"),
        ("/api/v1/namespaces/ml/pods/p-1/eviction", "pods/eviction"),
        ("/apis/batch/v1/namespaces/gpunode/jobs", "jobs"),
        ("/apis/apps/v1/namespaces/ml/deployments/trainer?dryRun=All", "deployments"),
        ("/apis/scheduling.k8s.io/v1/priorityclasses/gpunode-critical", "priorityclasses"),
        ("/apis/metrics.k8s.io/v1beta1/pods", "pods"),
        ("/api", "discovery"),
        ("/apis/batch/v1", "discovery"),
        ("/version", "discovery"),
    ],
)
def test_a_request_path_names_its_resource_without_object_names(path: str, resource: str) -> None:
    assert resource_of(path) == resource


def test_two_bots_in_one_process_count_separately() -> None:
    one, two = Metrics(), Metrics()
    one.command("diagnose", "ok")
    assert _value(one, "gpunode_commands_total", command="diagnose", outcome="ok") == 1
    assert _value(two, "gpunode_commands_total", command="diagnose", outcome="ok") == 0


async def test_every_declared_family_is_in_the_scrape() -> None:
    body, _ = await Metrics().render()
    families = {f.name for f in text_string_to_metric_families(body.decode())}
    # the parser names counters without _total (infos are gauges in the 0.0.4 text format)
    assert {n.removesuffix("_total") for n in EXPORTED} <= families


async def test_the_lease_holder_is_one_series_that_follows_the_election() -> None:
    m = Metrics()
    m.set_leader("replica-a", True)
    m.set_leader("replica-b", False)
    body, _ = await m.render()
    holders = [line for line in body.decode().splitlines() if line.startswith("gpunode_lease_")]
    assert holders == ['gpunode_lease_holder_info{holder="replica-b"} 1.0']
    assert _value(m, "gpunode_leader") == 0
    m.set_leader(None, False)
    assert _value(m, "gpunode_lease_holder_info", holder="") == 1


async def test_openmetrics_is_served_when_the_scraper_asks_for_it() -> None:
    body, content_type = await Metrics().render("application/openmetrics-text; version=1.0.0")
    assert content_type.startswith("application/openmetrics-text; version=1.0.0")
    assert body.decode().endswith("# EOF\n")


async def test_a_failing_refresher_keeps_the_last_value_and_the_scrape_works() -> None:
    m = Metrics()
    m.set_approvals_pending(4)

    async def broken() -> None:
        raise RuntimeError("store gone")

    m.on_scrape(broken)
    body, _ = await m.render()
    assert "gpunode_approvals_pending 4.0" in body.decode()


async def test_the_metrics_listener_serves_only_metrics() -> None:
    m = Metrics()
    m.command("top", "ok")
    runner = await start_metrics_listener(m, host="127.0.0.1", port=0)
    base = f"http://127.0.0.1:{listening_port(runner)}"
    try:
        async with aiohttp.ClientSession() as http:
            async with http.get(f"{base}/metrics") as resp:
                assert resp.status == 200
                assert resp.headers["Content-Type"] == "text/plain; version=0.0.4; charset=utf-8"
                assert 'gpunode_commands_total{command="top",outcome="ok"} 1.0' in await resp.text()
            for path in ("/healthz", "/slack/events", "/alertmanager"):
                async with http.get(f"{base}{path}") as resp:
                    assert resp.status == 404
    finally:
        await runner.cleanup()


async def test_slack_calls_are_counted_in_the_client_ok_refused_and_unreachable() -> None:
    m = Metrics()
    sim = SlackSim(signing_secret="s")
    await sim.start()
    try:
        client = make_client("xoxb-sim", base_url=sim.api_url)
        instrument(m, store=None, client=client, kube=None, replica_id="r")
        chat = SlackChat(client)
        await chat.post("C0INCIDENT", text="hi", blocks=[], thread_ts=None)
        with pytest.raises(SlackError):
            await chat.post("C0NOWHERE", text="hi", blocks=[], thread_ts=None)
    finally:
        await sim.stop()
    with refusing_port() as port:
        down = make_client("xoxb-test", base_url=f"http://127.0.0.1:{port}/api/")
        instrument(m, store=None, client=down, kube=None, replica_id="r")
        with pytest.raises(SlackError):
            await SlackChat(down).update("C1", "1.2", text="hi", blocks=[])

    assert _value(m, "gpunode_slack_api_requests_total", method="chat.postMessage") == 2
    assert (
        _value(
            m,
            "gpunode_slack_api_errors_total",
            method="chat.postMessage",
            status="200",
            error="channel_not_found",
        )
        == 1
    )
    assert (
        _value(
            m,
            "gpunode_slack_api_errors_total",
            method="chat.update",
            status="0",
            error="connection_error",
        )
        == 1
    )


async def test_kubernetes_requests_are_counted_in_the_transport(kubesim: KubeSim) -> None:
    m = Metrics()
    gw = Gateway.from_settings(
        KubeSettings(mode="server", server=kubesim.url, token=KUBE_BOT_TOKEN, verify_tls=False)
    )
    assert instrument(m, store=None, client=None, kube=gw, replica_id="r") == ["kube"]
    try:
        await gw.read_node("gpu-node-01")
        with pytest.raises(NotFoundError):
            await gw.read_node("gpu-node-99")
        kubesim.faults.add("GET", r"^/api/v1/nodes/gpu-node-01$", status=403)
        with pytest.raises(ForbiddenError):
            await gw.read_node("gpu-node-01")
    finally:
        gw.close()

    assert _value(m, "gpunode_kube_api_requests_total", verb="GET", resource="nodes") == 3
    for status in ("404", "403"):
        assert (
            _value(m, "gpunode_kube_api_errors_total", verb="GET", resource="nodes", status=status)
            == 1
        )


async def test_a_refused_pod_watch_is_counted_as_a_watch_error(kubesim: KubeSim) -> None:
    """A ServiceAccount that may list pods but not watch them (real RBAC in the stand-in):
    the diagnostic Job's wait lists, then its watch gets 403, counted as verb WATCH."""
    ns, rbac = "gpunode", "/apis/rbac.authorization.k8s.io/v1/namespaces/gpunode"
    sa = {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "lister"}}
    role = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "Role",
        "metadata": {"name": "pod-lister"},
        "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["list"]}],
    }
    binding = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "RoleBinding",
        "metadata": {"name": "pod-lister"},
        "subjects": [{"kind": "ServiceAccount", "name": "lister", "namespace": ns}],
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "pod-lister"},
    }
    for path, body in (
        (f"/api/v1/namespaces/{ns}/serviceaccounts", sa),
        (f"{rbac}/roles", role),
        (f"{rbac}/rolebindings", binding),
    ):
        status, answer = await kube_call(kubesim.url, "POST", path, body=body)
        assert status == 201, answer

    settings = KubeSettings(
        mode="server",
        server=kubesim.url,
        token=service_account_token(ns, "lister"),
        verify_tls=False,
    )
    transport = Transport(build_api_client(settings))
    m = Metrics()
    transport.observer = m.kube_api_call
    try:
        with pytest.raises(Exception, match=r"403|Forbidden"):
            await asyncio.to_thread(
                jobs.wait_for_pod,
                transport,
                ns,
                "run-none",
                deadline=time.monotonic() + 10,
                cancel=threading.Event(),
            )
    finally:
        transport.api_client.close()

    assert _value(m, "gpunode_kube_api_requests_total", verb="GET", resource="pods") == 1
    assert (
        _value(m, "gpunode_kube_api_errors_total", verb="GET", resource="pods", status="403") == 0
    )
    assert (
        _value(m, "gpunode_kube_api_errors_total", verb="WATCH", resource="pods", status="403") == 1
    )
