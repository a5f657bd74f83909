"""The alert intake over HTTP: closed by default, loud when opened without a token, and
every refusal answered in the response without a traceback in the log."""

from __future__ import annotations

import json
import logging

import pytest

from bot.config import AlertSettings
from gpunode_sandbox.demo import running_demo
from tests.e2e.conftest import incident_roots
from tests.e2e.test_http_edge import ALERT_TOKEN, alert_payload, post

pytestmark = pytest.mark.slow
NOT_IN = "C0NOTIN"


async def test_without_a_token_the_intake_is_disabled_and_says_how_to_enable_it() -> None:
    async with running_demo("seed") as demo:
        status, reply = await post(
            f"{demo.bot_url}/alertmanager",
            json.dumps(alert_payload("firing")).encode(),
            token=None,
        )
        await demo.drain()

        assert status == 404
        assert "GPUNODE_HTTP__ALERTMANAGER_TOKEN" in reply["error"]
        assert incident_roots(demo.slack) == []
        assert not [r for r in demo.kube.requests if r[0] == "POST"]


async def test_the_unauthenticated_opt_out_works_and_is_logged_loudly(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.INFO):
        async with running_demo("seed", alerts=AlertSettings(allow_unauthenticated=True)) as demo:
            status, reply = await post(
                f"{demo.bot_url}/alertmanager",
                json.dumps(alert_payload("firing")).encode(),
                token=None,
            )
            await demo.drain()

    assert (status, reply["diagnosing"]) == (200, ["gpu-node-01"])
    loud = [r for r in caplog.records if "ALERT INTAKE IS OPEN" in r.getMessage()]
    assert len(loud) == 1 and loud[0].levelno == logging.WARNING


async def test_an_unknown_node_is_answered_in_the_response_and_audited(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async with running_demo("seed", alert_token=ALERT_TOKEN) as demo:
        body = json.dumps(alert_payload("firing", node="gpu-node-99")).encode()
        with caplog.at_level(logging.INFO):
            status, reply = await post(f"{demo.bot_url}/alertmanager", body)
            await demo.drain()
        rows = await demo.runtime.store.audit_since(None)

    assert (status, reply["unknown_nodes"], reply["diagnosing"]) == (200, ["gpu-node-99"], [])
    assert [(r.actor, r.outcome) for r in rows] == [("alertmanager", "unknown_node")]
    assert not [r for r in caplog.records if r.exc_info or r.levelno >= logging.ERROR]


async def test_a_forged_label_is_refused_and_never_reaches_a_log_line_raw(
    caplog: pytest.LogCaptureFixture,
) -> None:
    forged = "gpu-node-01\n2026-01-01 00:00:00 CRITICAL gpunode forged"
    async with running_demo("seed", alert_token=ALERT_TOKEN) as demo:
        with caplog.at_level(logging.DEBUG):
            status, reply = await post(
                f"{demo.bot_url}/alertmanager",
                json.dumps(alert_payload("firing", node=forged)).encode(),
            )
            await demo.drain()

        assert status == 200 and reply["diagnosing"] == []
        assert reply["refused"][0]["node"].startswith("gpu-node-01\\n")
        assert incident_roots(demo.slack) == []
    assert not any(forged in r.getMessage() for r in caplog.records)


async def test_a_channel_the_bot_is_not_in_gets_one_clear_error(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async with running_demo("seed", alert_token=ALERT_TOKEN, incident_channel=NOT_IN) as demo:
        demo.slack.add_channel(NOT_IN, "elsewhere", bot_member=False)
        url = f"{demo.bot_url}/alertmanager"
        with caplog.at_level(logging.INFO):
            await post(url, json.dumps(alert_payload("firing")).encode())
            await demo.drain()
            second = alert_payload("firing", node="gpu-node-02")
            status, reply = await post(url, json.dumps(second).encode())
            await demo.drain()

    errors = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert len(errors) == 1, [r.getMessage() for r in errors]
    assert "/invite" in errors[0].getMessage() and NOT_IN in errors[0].getMessage()
    assert not [r for r in caplog.records if r.exc_info]
    assert (status, reply["problem"]) == (200, "not_in_channel")
