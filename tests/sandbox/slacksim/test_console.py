"""The console's page and JSON API over real HTTP (browser tests come separately)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import Any

import aiohttp
import pytest
from aiohttp import web
from slack_bolt.async_app import AsyncApp
from slack_sdk.web.async_client import AsyncWebClient

from gpunode_sandbox.slacksim import SlackSim

CH = "C0INCIDENT"


async def test_the_page_and_its_scripts_are_served(sim: SlackSim) -> None:
    async with aiohttp.ClientSession() as session:
        async with session.get(sim.base_url + "/") as r:
            page = await r.text()
        assert 'data-testid="command-input"' in page and 'data-testid="user-picker"' in page
        for name in ("app.js", "blocks.js", "mrkdwn.js", "app.css"):
            async with session.get(f"{sim.base_url}/static/{name}") as r:
                assert r.status == 200, name


async def test_state_shows_ephemerals_only_to_their_user(sim: SlackSim) -> None:
    sim.ws.add_ephemeral("U0DAVE", CH, {"type": "message", "text": "only dave"})
    async with aiohttp.ClientSession() as session:
        async with session.get(sim.base_url + "/console/api/state?user=U0DAVE") as r:
            dave = await r.json()
        async with session.get(sim.base_url + "/console/api/state?user=U0ALICE") as r:
            alice = await r.json()
    assert [e["text"] for e in dave["ephemerals"]] == ["only dave"]
    assert alice["ephemerals"] == []
    assert {u["id"] for u in alice["users"]} >= {"U0ALICE", "U0BOB", "U0CAROL", "U0DAVE"}


async def test_a_console_reply_stores_the_message_and_bumps_the_version(sim: SlackSim) -> None:
    parent = sim.ws.store(CH, {"type": "message", "user": "U0GPUNODE", "text": "incident"})["ts"]
    async with (
        aiohttp.ClientSession() as session,
        session.get(sim.base_url + "/console/events") as stream,
    ):
        first = await stream.content.readuntil(b"\n\n")
        body = {"user": "U0CAROL", "channel": CH, "text": "mine", "thread_ts": parent}
        async with session.post(sim.base_url + "/console/api/reply", json=body) as r:
            assert r.status == 200
        second = await stream.content.readuntil(b"\n\n")
    assert first.startswith(b"event: version") and second != first
    assert [m["text"] for m in sim.messages(CH, thread_ts=parent)] == ["incident", "mine"]


async def _command(sim: SlackSim, text: str) -> dict[str, Any]:
    """The console's POST for one command, as the page sends it."""
    body = {"user": "U0ALICE", "channel": CH, "text": text}
    async with (
        aiohttp.ClientSession() as session,
        session.post(sim.base_url + "/console/api/command", json=body) as r,
    ):
        assert r.status == 200
        result: dict[str, Any] = await r.json()
        return result


@pytest.fixture
async def bot(
    sim: SlackSim, secret: str, serve: Callable[[web.Application], Awaitable[str]]
) -> tuple[str, list[str]]:
    """A minimal Bolt app served over HTTP, NOT yet wired to the sim: (its request URL, the
    command texts it received). It acks each command with ``got <text>``."""
    seen: list[str] = []
    app = AsyncApp(
        client=AsyncWebClient(token="xoxb-test", base_url=sim.api_url), signing_secret=secret
    )

    @app.command("/gpunode")
    async def command(ack: Any, body: dict[str, Any]) -> None:
        seen.append(body["text"])
        await ack(f"got {body['text']}")

    return await serve(app.web_app()), seen


async def test_a_console_command_sent_before_the_bot_is_wired_waits_and_then_reaches_it(
    sim: SlackSim, bot: tuple[str, list[str]]
) -> None:
    url, seen = bot
    sent = asyncio.create_task(_command(sim, "diagnose gpu-node-01"))
    await asyncio.sleep(0.5)  # the demo wires its bot about 2 s after the console answers
    assert not sent.done() and seen == []
    sim.set_request_url(url)
    result = await asyncio.wait_for(sent, 5)
    assert result["status"] == 200 and seen == ["diagnose gpu-node-01"]
    assert [e["text"] for e in sim.ephemerals("U0ALICE")] == ["got diagnose gpu-node-01"]


async def test_a_console_command_whose_bot_never_comes_says_it_is_starting_and_gives_it_back(
    sim: SlackSim,
) -> None:
    sim.console_hold_s = 0.3
    result = await _command(sim, "diagnose gpu-node-01")
    assert result == {"status": None, "starting": True, "text": "diagnose gpu-node-01"}
    assert sim.ephemerals("U0ALICE") == []  # not sent: no "dispatch_failed" from Slackbot


async def test_in_socket_mode_a_console_command_waits_for_the_app_to_connect(
    sim: SlackSim,
) -> None:
    sim.use_socket_mode()
    sim.console_hold_s = 0.3
    result = await _command(sim, "status")
    assert result["starting"] is True and sim.envelopes == []


async def test_a_console_command_after_the_bot_is_wired_is_sent_at_once(
    sim: SlackSim, bot: tuple[str, list[str]]
) -> None:
    url, seen = bot
    sim.set_request_url(url)
    start = time.monotonic()
    result = await _command(sim, "status")
    # a wired bot is never waited for: a bare Bolt ack takes milliseconds, the demo's
    # start-up (what a held command waits out) about 2 s
    assert time.monotonic() - start < 1.5
    assert result["status"] == 200 and "starting" not in result and seen == ["status"]


async def test_a_socket_mode_app_that_is_connected_gets_console_commands_at_once(
    sim: SlackSim, client: AsyncWebClient
) -> None:
    sim.use_socket_mode()  # no request URL: the open connection is what wires the bot
    url = str((await client.apps_connections_open(app_token="xapp-1-A0GPUNODE-test"))["url"])
    async with aiohttp.ClientSession() as http, http.ws_connect(url) as sock:
        await sock.receive_json(timeout=5)  # hello
        sent = asyncio.create_task(_command(sim, "status"))
        envelope = await sock.receive_json(timeout=5)
        await sock.send_json({"envelope_id": envelope["envelope_id"], "payload": {"text": "ok"}})
        result = await asyncio.wait_for(sent, 5)
    assert envelope["payload"]["text"] == "status"
    assert result["status"] == 200 and "starting" not in result
