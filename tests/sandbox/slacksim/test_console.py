"""The console's page and JSON API over real HTTP (browser tests come separately)."""

from __future__ import annotations

import aiohttp

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


async def test_a_console_command_without_a_bot_reports_it(sim: SlackSim) -> None:
    async with aiohttp.ClientSession() as session:
        body = {"user": "U0ALICE", "channel": CH, "text": "status"}
        async with session.post(sim.base_url + "/console/api/command", json=body) as r:
            result = await r.json()
    assert result["status"] == 0 and "request URL" in result["body"]
