"""End to end at the HTTP edge: Alertmanager intake, request signing, health probes,
and a Kubernetes API that fails while a diagnosis runs."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest

from gpunode_sandbox.demo import Demo, running_demo
from gpunode_sandbox.slacksim import SignOptions
from gpunode_sandbox.story import CHANNEL
from tests.e2e.conftest import NODE, diagnose, failed_chat_calls, incident_roots, text_of, thread

pytestmark = pytest.mark.slow
ALERT_TOKEN = "alert-token-for-tests"


@pytest.fixture
async def guarded() -> AsyncIterator[Demo]:
    """The demo with a bearer token required on /alertmanager."""
    async with running_demo("seed", alert_token=ALERT_TOKEN) as d:
        yield d


def alert_payload(status: str, *, node: str = NODE) -> dict[str, Any]:
    alert = {
        "status": status,
        "labels": {"alertname": "GpunodeMemoryAvailableLow", "node": node, "severity": "page"},
        "annotations": {"summary": "memory available low"},
        "startsAt": "2026-11-30T10:00:00Z",
        "endsAt": "0001-01-01T00:00:00Z" if status == "firing" else "2026-11-30T10:20:00Z",
        "generatorURL": "http://prometheus/graph",
        "fingerprint": "c0ffee0123456789",
    }
    return {
        "version": "4",
        "groupKey": '{}:{alertname="GpunodeMemoryAvailableLow"}',
        "truncatedAlerts": 0,
        "status": status,
        "receiver": "gpunode",
        "groupLabels": {"alertname": "GpunodeMemoryAvailableLow"},
        "commonLabels": alert["labels"],
        "commonAnnotations": {},
        "externalURL": "http://alertmanager",
        "alerts": [alert],
    }


async def post(url: str, body: bytes, *, token: str | None = ALERT_TOKEN) -> tuple[int, Any]:
    headers = {"Content-Type": "application/json"}
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    async with aiohttp.ClientSession() as http, http.post(url, data=body, headers=headers) as r:
        return r.status, await r.json()


async def test_a_firing_alert_opens_an_incident_once_and_resolved_is_noted(guarded: Demo) -> None:
    url = f"{guarded.bot_url}/alertmanager"
    firing = json.dumps(alert_payload("firing")).encode()

    status, reply = await post(url, firing)
    await guarded.drain()
    again, repeat = await post(url, firing)
    await guarded.drain()

    assert (status, reply["diagnosing"]) == (200, [NODE])
    assert (again, repeat["diagnosing"], repeat["duplicates"]) == (200, [], 1)
    roots = incident_roots(guarded.slack)
    assert len(roots) == 1
    replies = [text_of(m) for m in thread(guarded, str(roots[0]["ts"]))]
    assert any("Memory evidence" in r for r in replies)

    status, reply = await post(url, json.dumps(alert_payload("resolved")).encode())
    await guarded.drain()

    assert (status, reply["resolved"]) == (200, [NODE])
    replies = [text_of(m) for m in thread(guarded, str(roots[0]["ts"]))]
    assert any("has resolved" in r for r in replies)
    assert failed_chat_calls(guarded.slack) == []


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        (b"not json", "not an Alertmanager webhook payload"),
        (json.dumps({**alert_payload("firing"), "version": "3"}).encode(), "version"),
        (json.dumps({"version": "4", "status": "firing"}).encode(), "groupKey"),
    ],
)
async def test_a_bad_alert_body_gets_400_with_the_reason(
    guarded: Demo, body: bytes, reason: str
) -> None:
    status, reply = await post(f"{guarded.bot_url}/alertmanager", body)

    assert status == 400
    assert reason in reply["error"]
    assert guarded.slack.calls == [] or incident_roots(guarded.slack) == []


@pytest.mark.parametrize("token", [None, "wrong-token"])
async def test_a_missing_or_wrong_bearer_gets_401(guarded: Demo, token: str | None) -> None:
    body = json.dumps(alert_payload("firing")).encode()

    status, _ = await post(f"{guarded.bot_url}/alertmanager", body, token=token)
    await guarded.drain()

    assert status == 401
    assert incident_roots(guarded.slack) == []
    assert await guarded.runtime.store.open_incidents() == []


@pytest.mark.parametrize(
    "signing",
    [
        SignOptions(secret="forged-secret"),
        SignOptions(timestamp_offset_s=-301),
        SignOptions(tamper_body=True),
        SignOptions(unsigned=True),
    ],
    ids=["forged", "stale", "tampered", "unsigned"],
)
async def test_a_badly_signed_command_is_refused_and_nothing_happens(
    demo: Demo, signing: SignOptions
) -> None:
    result = await demo.slack.slash_command("U0ALICE", CHANNEL, f"diagnose {NODE}", signing=signing)
    await demo.drain()

    assert result.status == 401
    assert [c for c in demo.slack.calls if c.method.startswith("chat.")] == []
    assert await demo.runtime.store.open_incidents() == []
    assert not [r for r in demo.kube.requests if r[0] == "POST"]


async def test_healthz_is_200_and_readyz_200_once_slack_accepts_the_token(demo: Demo) -> None:
    async with aiohttp.ClientSession() as http:
        async with http.get(f"{demo.bot_url}/healthz") as r:
            assert r.status == 200
        async with http.get(f"{demo.bot_url}/readyz") as r:
            assert r.status == 200
    assert any(c.method == "auth.test" and c.ok for c in demo.slack.calls)


async def test_readyz_is_503_while_slack_refuses_the_token(demo: Demo) -> None:
    demo.slack.fail("auth.test", error="invalid_auth", times=5)

    async with aiohttp.ClientSession() as http, http.get(f"{demo.bot_url}/readyz") as r:
        assert r.status == 503


def _jobs_left(demo: Demo) -> list[str]:
    return [j["metadata"]["name"] for j in demo.kube.list("jobs", "gpunode")]


@pytest.mark.parametrize(
    ("method", "path", "fault", "words"),
    [
        ("POST", r"/namespaces/gpunode/jobs$", {"status": 500}, "did not complete"),
        ("POST", r"/namespaces/gpunode/jobs$", {"status": 403}, "forbidden"),
        ("GET", r"/api/v1/namespaces/gpunode/pods", {"status": 500, "times": -1}, "did not"),
        ("GET", r"/namespaces/gpunode/pods/[^/]+/log", {"delay_s": 4, "times": -1}, "did not"),
    ],
    ids=["job-create-500", "job-create-403", "job-pods-500", "log-timeout"],
)
async def test_a_failing_cluster_during_diagnose_leaves_a_clear_message_and_no_job(
    demo: Demo, method: str, path: str, fault: dict[str, Any], words: str
) -> None:
    demo.runtime.services.clusters.default_port().transport.timeout_s = 2  # type: ignore[attr-defined]
    rule = demo.kube.faults.add(method, path, **fault)

    root_ts = await diagnose(demo)
    assert rule.hits >= 1
    demo.kube.faults.clear()

    replies = "\n".join(text_of(m) for m in thread(demo, root_ts)[1:]).lower()
    assert words in replies
    assert "traceback" not in replies
    incidents = await demo.runtime.store.open_incidents(NODE)
    assert [i.id for i in incidents] == ["INC-0001"]
    assert incidents[0].thread_ts == root_ts
    assert _jobs_left(demo) == []
    assert failed_chat_calls(demo.slack) == []
