"""Socket Mode in the Slack stand-in: apps.connections.open, the WebSocket link, envelopes and
acks, first with a raw WebSocket client (the wire), then with slack_bolt's own handler."""

from __future__ import annotations

import asyncio
import json
import random
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest
from slack_bolt.adapter.socket_mode.async_handler import AsyncSocketModeHandler
from slack_bolt.async_app import AsyncApp
from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from gpunode_sandbox.slacksim import SlackSim

CH = "C0INCIDENT"
APP_TOKEN = "xapp-1-A0GPUNODE-test"
MODAL = {
    "type": "modal",
    "callback_id": "why",
    "title": {"type": "plain_text", "text": "Why?"},
    "submit": {"type": "plain_text", "text": "Go"},
    "blocks": [
        {
            "type": "input",
            "block_id": "reason",
            "label": {"type": "plain_text", "text": "Reason"},
            "element": {"type": "plain_text_input", "action_id": "r"},
        }
    ],
}


async def open_url(client: AsyncWebClient, token: str = APP_TOKEN) -> str:
    return str((await client.apps_connections_open(app_token=token))["url"])


@pytest.mark.parametrize(
    ("token", "error"),
    [("xoxb-test", "not_allowed_token_type"), ("bogus", "invalid_auth")],
)
async def test_apps_connections_open_refuses_a_token_that_is_not_an_app_token(
    sim: SlackSim, client: AsyncWebClient, token: str, error: str
) -> None:
    with pytest.raises(SlackApiError) as err:
        await client.apps_connections_open(app_token=token)
    assert err.value.response["error"] == error


async def test_apps_connections_open_gives_a_single_use_websocket_url_that_says_hello(
    sim: SlackSim, client: AsyncWebClient
) -> None:
    url = await open_url(client)
    assert url.startswith(sim.base_url.replace("http://", "ws://") + "/link/?ticket=")

    async with aiohttp.ClientSession() as http:
        async with http.ws_connect(url) as sock:
            hello = await sock.receive_json(timeout=5)
        with pytest.raises(aiohttp.WSServerHandshakeError) as err:
            await http.ws_connect(url)
    assert err.value.status == 401
    assert hello["type"] == "hello"
    assert hello["connection_info"] == {"app_id": "A0GPUNODE"}


async def test_an_envelope_carries_the_payload_and_a_json_ack_becomes_an_ephemeral(
    sim: SlackSim, client: AsyncWebClient
) -> None:
    sim.use_socket_mode()
    async with aiohttp.ClientSession() as http, http.ws_connect(await open_url(client)) as sock:
        await sock.receive_json(timeout=5)  # hello
        sent = asyncio.create_task(sim.slash_command("U0ALICE", CH, "help"))
        envelope = await sock.receive_json(timeout=5)
        await sock.send_json({"envelope_id": envelope["envelope_id"], "payload": {"text": "usage"}})
        result = await sent

    assert set(envelope) == {
        "envelope_id",
        "payload",
        "type",
        "accepts_response_payload",
        "retry_attempt",
        "retry_reason",
    }
    assert envelope["type"] == "slash_commands"
    assert envelope["accepts_response_payload"] is True
    assert (envelope["retry_attempt"], envelope["retry_reason"]) == (0, "")
    payload = envelope["payload"]
    assert (payload["command"], payload["text"]) == ("/gpunode", "help")
    assert payload["user_id"] == "U0ALICE"
    assert payload["response_url"].startswith(sim.base_url + "/hooks/")
    assert result.status == 200 and not result.late
    assert [m["text"] for m in sim.ephemerals("U0ALICE")] == ["usage"]
    [ack] = sim.acks
    assert ack.matched and ack.payload == {"text": "usage"}


async def test_without_an_ack_the_command_fails_like_slack_says(
    sim: SlackSim, client: AsyncWebClient
) -> None:
    sim.use_socket_mode()
    sim.driver.timeout_s = 0.3
    async with aiohttp.ClientSession() as http, http.ws_connect(await open_url(client)) as sock:
        await sock.receive_json(timeout=5)
        result = await sim.slash_command("U0ALICE", CH, "help")

    assert result.status == 0
    assert "dispatch_failed" in sim.ephemerals("U0ALICE")[-1]["text"]


async def test_with_no_app_connected_nothing_is_delivered(sim: SlackSim) -> None:
    sim.use_socket_mode()
    sim.set_request_url("http://127.0.0.1:9/slack/events")  # must not be used in Socket Mode

    result = await sim.slash_command("U0ALICE", CH, "help")

    assert result.status == 0 and "not connected" in result.body
    assert sim.envelopes == []


@pytest.fixture
async def bolt(sim: SlackSim) -> AsyncIterator[list[dict[str, Any]]]:
    """A minimal Bolt app connected with slack_bolt's AsyncSocketModeHandler; yields bodies."""
    sim.use_socket_mode()
    seen: list[dict[str, Any]] = []
    app = AsyncApp(
        client=AsyncWebClient(token="xoxb-test", base_url=sim.api_url),
        request_verification_enabled=False,
    )

    @app.command("/gpunode")
    async def command(ack: Any, body: dict[str, Any], client: AsyncWebClient) -> None:
        seen.append(body)
        if body["text"] == "modal":
            await client.views_open(trigger_id=body["trigger_id"], view=MODAL)
            await ack()
        else:
            await ack(text=f"got {body['text']}")

    @app.view("why")
    async def submitted(ack: Any, view: dict[str, Any]) -> None:
        if not view["state"]["values"]["reason"]["r"]["value"]:
            await ack(response_action="errors", errors={"reason": "Say why"})
        else:
            await ack()

    @app.event("message")
    async def message(body: dict[str, Any]) -> None:
        seen.append(body)

    handler = AsyncSocketModeHandler(app, APP_TOKEN)
    await handler.connect_async()  # type: ignore[no-untyped-call]
    yield seen
    await handler.close_async()  # type: ignore[no-untyped-call]


async def test_bolt_over_the_socket_gets_commands_and_its_text_ack_is_shown(
    sim: SlackSim, bolt: list[dict[str, Any]]
) -> None:
    result = await sim.slash_command("U0ALICE", CH, "diagnose gpu-node-01")

    assert result.status == 200 and not result.late
    assert bolt[-1]["text"] == "diagnose gpu-node-01"
    assert sim.ephemerals("U0ALICE")[-1]["text"] == "got diagnose gpu-node-01"
    assert [c.method for c in sim.calls if c.method == "apps.connections.open"] == [
        "apps.connections.open"
    ]


async def test_bolt_view_errors_ack_keeps_the_modal_open_and_an_empty_ack_closes_it(
    sim: SlackSim, bolt: list[dict[str, Any]]
) -> None:
    await sim.slash_command("U0ALICE", CH, "modal")
    [view] = sim.open_views("U0ALICE")

    await sim.submit_view("U0ALICE", view["id"], {"reason": {"r": ""}})
    assert sim.open_views("U0ALICE")[-1]["errors"] == {"reason": "Say why"}
    await sim.submit_view("U0ALICE", view["id"], {"reason": {"r": "ECC"}})
    assert sim.open_views("U0ALICE") == []
    kinds = [(e.type, e.payload.get("type"), e.accepts_response_payload) for e in sim.envelopes]
    assert kinds[1:] == [("interactive", "view_submission", True)] * 2


async def test_an_event_redelivery_over_the_socket_says_retry_attempt(
    sim: SlackSim, bolt: list[dict[str, Any]]
) -> None:
    await sim.post_user_message("U0ALICE", CH, "anyone?", deliveries=2)
    await asyncio.sleep(0.1)  # event listeners run after the ack

    events = [e for e in sim.envelopes if e.type == "events_api"]
    assert [(e.retry_attempt, e.retry_reason) for e in events] == [(0, ""), (1, "timeout")]
    assert events[0].accepts_response_payload is False
    assert json.dumps(events[0].payload) == json.dumps(events[1].payload)
    assert [b["event_id"] for b in bolt] == [events[0].payload["event_id"]] * 2


async def test_with_two_connections_each_envelope_goes_to_exactly_one_of_them(
    sim: SlackSim, client: AsyncWebClient
) -> None:
    """Slack sends each envelope to one random connection of the app (one per replica)."""
    sim.use_socket_mode()
    sim.socket.rng = random.Random(15)
    received: dict[int, list[str]] = {0: [], 1: []}

    async def app(sock: aiohttp.ClientWebSocketResponse, n: int) -> None:
        async for msg in sock:
            envelope = json.loads(msg.data)
            if "envelope_id" in envelope:
                received[n].append(envelope["payload"]["text"])
                await sock.send_json({"envelope_id": envelope["envelope_id"]})

    async with aiohttp.ClientSession() as http:
        socks = [await http.ws_connect(await open_url(client)) for _ in range(2)]
        for s in socks:
            assert (await s.receive_json(timeout=5))["type"] == "hello"
        readers = [asyncio.create_task(app(s, n)) for n, s in enumerate(socks)]
        results = await asyncio.gather(
            *(sim.slash_command("U0ALICE", CH, f"status {i}") for i in range(40))
        )
        for s in socks:
            await s.close()
        await asyncio.gather(*readers)

    assert all(r.status == 200 for r in results)
    texts = received[0] + received[1]
    assert sorted(texts) == sorted(f"status {i}" for i in range(40)), "each exactly once"
    assert received[0] and received[1], "both connections got a share"
    assert {e.connection for e in sim.envelopes} == {1, 2}
