"""What the driver sends has the shape of the recorded Slack payloads in tests/fixtures/slack."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs

from aiohttp import web

from gpunode_sandbox.slacksim import SlackSim
from gpunode_sandbox.slacksim.blocks import normalize_blocks
from gpunode_sandbox.slacksim.methods_views import open_view

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "slack"
CH = "C0INCIDENT"


def keys(node: Any, prefix: str = "") -> set[str]:
    """Dotted key paths of dicts (lists contribute their first item)."""
    out: set[str] = set()
    if isinstance(node, dict):
        for k, v in node.items():
            out.add(prefix + k)
            out |= keys(v, prefix + k + ".")
    elif isinstance(node, list) and node:
        out |= keys(node[0], prefix)
    return out


async def capture(sim: SlackSim, serve: Any) -> list[tuple[dict[str, str], bytes]]:
    seen: list[tuple[dict[str, str], bytes]] = []

    async def handler(request: web.Request) -> web.Response:
        seen.append((dict(request.headers), await request.read()))
        return web.Response()

    app = web.Application()
    app.router.add_post("/slack/events", handler)
    sim.set_request_url(await serve(app))
    return seen


def payload(body: bytes) -> dict[str, Any]:
    return dict(json.loads(parse_qs(body.decode())["payload"][0]))


async def test_slash_command_form_has_every_recorded_field(sim: SlackSim, serve: Any) -> None:
    seen = await capture(sim, serve)
    await sim.slash_command("U0ALICE", CH, "drain node-7")
    recorded = parse_qs((FIXTURES / "slash_command.txt").read_text().strip())
    sent = parse_qs(seen[0][1].decode())
    assert set(sent) == set(recorded)
    assert sent["text"] == ["drain node-7"] and sent["command"] == ["/gpunode"]
    assert seen[0][0]["Content-Type"] == "application/x-www-form-urlencoded"


async def test_block_actions_payload_has_the_recorded_shape(sim: SlackSim, serve: Any) -> None:
    recorded = json.loads((FIXTURES / "block_actions.json").read_text())
    blocks = normalize_blocks(
        [{k: v for k, v in b.items() if k != "block_id"} for b in recorded["message"]["blocks"]]
    )
    parent_ts = sim.ws.store(CH, {"type": "message", "text": "incident", "user": "U0GPUNODE"})["ts"]
    bot_msg: dict[str, Any] = {
        "type": "message",
        "text": "x",
        "user": "U0GPUNODE",
        "bot_id": "B0GPUNODE",
    }
    bot_msg.update(app_id="A0GPUNODE", team="T0GPUNODE", blocks=blocks)
    reply = sim.ws.store(CH, bot_msg, thread_ts=parent_ts)
    seen = await capture(sim, serve)
    await sim.click("U0ALICE", CH, reply["ts"], "drain_confirm")
    sent = payload(seen[0][1])
    assert keys(recorded) - keys(sent) == set()
    assert sent["container"]["thread_ts"] == parent_ts


async def test_view_submission_payload_has_the_recorded_shape(sim: SlackSim, serve: Any) -> None:
    recorded = json.loads((FIXTURES / "view_submission.json").read_text())
    view = {
        k: recorded["view"][k]
        for k in ("type", "callback_id", "private_metadata", "blocks", "title", "submit", "close")
    }
    vid = open_view(sim.ws, "U0ALICE", view)["id"]
    seen = await capture(sim, serve)
    await sim.submit_view("U0ALICE", vid, {"reason": {"reason_input": "ECC errors"}})
    sent = payload(seen[0][1])
    assert keys(recorded) - keys(sent) == set()
    assert sent["view"]["state"] == recorded["view"]["state"]


async def test_thread_reply_event_has_the_recorded_shape(sim: SlackSim, serve: Any) -> None:
    recorded = json.loads((FIXTURES / "event_callback_thread_message.json").read_text())
    parent = sim.ws.store(CH, {"type": "message", "user": "U0GPUNODE", "text": "incident"})["ts"]
    seen = await capture(sim, serve)
    await sim.post_user_message("U0BOB", CH, "node-7 is back", thread_ts=parent)
    sent = json.loads(seen[0][1])
    assert keys(recorded) - keys(sent) == set()
    assert sent["event"]["parent_user_id"] == "U0GPUNODE" and sent["event"]["thread_ts"] == parent
    assert seen[0][0]["Content-Type"] == "application/json"


async def test_url_verification_body_matches_the_recording(sim: SlackSim, serve: Any) -> None:
    recorded = json.loads((FIXTURES / "url_verification.json").read_text())
    seen = await capture(sim, serve)
    await sim.url_verification(recorded["challenge"])
    assert set(json.loads(seen[0][1])) == set(recorded)
