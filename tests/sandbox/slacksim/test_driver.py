"""The driver against a minimal slack_bolt AsyncApp served with app.web_app() on 127.0.0.1."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import aiohttp
import pytest
from aiohttp import web
from slack_bolt.async_app import AsyncApp
from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from gpunode_sandbox.slacksim import SignOptions, SlackSim

CH = "C0INCIDENT"
MODAL = {
    "type": "modal",
    "callback_id": "drain",
    "title": {"type": "plain_text", "text": "Drain?"},
    "submit": {"type": "plain_text", "text": "Drain"},
    "blocks": [
        {
            "type": "input",
            "block_id": "reason",
            "label": {"type": "plain_text", "text": "Reason"},
            "element": {"type": "plain_text_input", "action_id": "reason_input", "multiline": True},
        },
        {
            "type": "input",
            "block_id": "count",
            "label": {"type": "plain_text", "text": "Pods"},
            "element": {"type": "number_input", "action_id": "n", "is_decimal_allowed": False},
        },
        {
            "type": "input",
            "block_id": "tier",
            "label": {"type": "plain_text", "text": "Tier"},
            "element": {
                "type": "static_select",
                "action_id": "t",
                "options": [
                    {"text": {"type": "plain_text", "text": "Tier 1"}, "value": "t1"},
                    {"text": {"type": "plain_text", "text": "Tier 2"}, "value": "t2"},
                ],
            },
        },
    ],
}
BUTTONS: list[dict[str, Any]] = [
    {"type": "section", "text": {"type": "mrkdwn", "text": "*node-7* is leaking"}},
    {
        "type": "actions",
        "block_id": "acts",
        "elements": [
            {
                "type": "button",
                "action_id": "drain",
                "value": "node-7",
                "style": "danger",
                "text": {"type": "plain_text", "text": "Drain"},
            },
            {"type": "button", "action_id": "ack", "text": {"type": "plain_text", "text": "Ack"}},
        ],
    },
]


class Bot:
    """What the test bot saw."""

    def __init__(self) -> None:
        self.bodies: list[dict[str, Any]] = []
        self.event_ids: list[str] = []


@pytest.fixture
async def bot(
    sim: SlackSim, secret: str, serve: Callable[[web.Application], Awaitable[str]]
) -> AsyncIterator[Bot]:
    seen = Bot()
    app = AsyncApp(
        client=AsyncWebClient(token="xoxb-test", base_url=sim.api_url), signing_secret=secret
    )

    @app.command("/gpunode")
    async def command(ack: Any, body: dict[str, Any], client: AsyncWebClient) -> None:
        seen.bodies.append(body)
        if body["text"] == "modal":
            await client.views_open(trigger_id=body["trigger_id"], view=MODAL)
            await ack()
        elif body["text"] == "card":
            await client.chat_postMessage(channel=body["channel_id"], text="card", blocks=BUTTONS)
            await ack()
        elif body["text"] == "help":
            await ack(text="usage: /gpunode diagnose <node>")
        else:
            await ack()

    @app.action("drain")
    async def drain(ack: Any, body: dict[str, Any], respond: Any) -> None:
        seen.bodies.append(body)
        await respond(
            text="draining",
            response_type="in_channel",
            replace_original=False,
            thread_ts=body["message"]["ts"],
        )
        await ack()

    @app.action("ack")
    async def acked(ack: Any, body: dict[str, Any], respond: Any) -> None:
        await respond(text="acknowledged by alice", replace_original=True)
        await ack()

    @app.view("drain")
    async def submitted(ack: Any, view: dict[str, Any]) -> None:
        values = view["state"]["values"]
        seen.bodies.append(values)
        if not values["reason"]["reason_input"]["value"]:
            await ack(response_action="errors", errors={"reason": "Say why"})
        else:
            await ack()

    @app.event("message")
    async def message(body: dict[str, Any]) -> None:
        seen.event_ids.append(body["event_id"])

    sim.set_request_url(await serve(app.web_app()))
    yield seen


async def test_signed_slash_command_is_accepted(sim: SlackSim, bot: Bot) -> None:
    result = await sim.slash_command("U0ALICE", CH, "status gpu-node-01")
    assert result.status == 200
    assert bot.bodies[0]["text"] == "status gpu-node-01"
    assert bot.bodies[0]["channel_id"] == CH and bot.bodies[0]["user_id"] == "U0ALICE"
    assert [c.method for c in sim.calls] == ["auth.test"]


@pytest.mark.parametrize(
    "signing",
    [
        SignOptions(secret="wrong"),
        SignOptions(timestamp_offset_s=-301),
        SignOptions(timestamp_offset_s=400),
        SignOptions(tamper_body=True),
        SignOptions(unsigned=True),
    ],
    ids=["wrong-secret", "stale", "future", "tampered", "unsigned"],
)
async def test_badly_signed_requests_get_401(sim: SlackSim, bot: Bot, signing: SignOptions) -> None:
    result = await sim.slash_command("U0ALICE", CH, "status", signing=signing)
    assert result.status == 401
    assert bot.bodies == []


async def test_a_text_ack_is_shown_as_an_ephemeral_message(sim: SlackSim, bot: Bot) -> None:
    await sim.slash_command("U0DAVE", CH, "help")
    assert [e["text"] for e in sim.ephemerals("U0DAVE")] == ["usage: /gpunode diagnose <node>"]
    assert sim.ephemerals("U0ALICE") == [] and sim.messages(CH) == []


async def test_click_sends_block_actions_and_respond_lands_in_thread(
    sim: SlackSim, bot: Bot
) -> None:
    await sim.slash_command("U0ALICE", CH, "card")
    [card] = sim.messages(CH)
    result = await sim.click("U0BOB", CH, card["ts"], "drain")
    assert result.status == 200
    payload = bot.bodies[-1]
    assert payload["actions"][0]["value"] == "node-7"
    assert payload["actions"][0]["block_id"] == "acts"
    assert payload["container"] == {
        "type": "message",
        "message_ts": card["ts"],
        "channel_id": CH,
        "is_ephemeral": False,
    }
    assert [m["text"] for m in sim.messages(CH, thread_ts=card["ts"])] == ["card", "draining"]


async def test_respond_replace_original_rewrites_the_card(sim: SlackSim, bot: Bot) -> None:
    await sim.slash_command("U0ALICE", CH, "card")
    [card] = sim.messages(CH)
    await sim.click("U0ALICE", CH, card["ts"], "ack")
    assert sim.message(CH, card["ts"])["text"] == "acknowledged by alice"  # type: ignore[index]


async def test_response_url_works_five_times_within_30_minutes(
    sim: SlackSim, bot: Bot, clock: Any
) -> None:
    await sim.slash_command("U0ALICE", CH, "card")
    [card] = sim.messages(CH)
    await sim.click("U0ALICE", CH, card["ts"], "drain")
    await sim.click("U0ALICE", CH, card["ts"], "drain")
    used, fresh = [c for c in sim.ws.response_urls.values() if c.source_ts]
    statuses = []
    async with aiohttp.ClientSession() as session:
        for ctx in [used] * 5:
            url = f"{sim.base_url}/hooks/T0GPUNODE/{ctx.token}"
            async with session.post(url, json={"text": "again"}) as r:
                statuses.append((r.status, await r.text()))
        clock.now += 31 * 60
        async with session.post(
            f"{sim.base_url}/hooks/T0GPUNODE/{fresh.token}", json={"text": "late"}
        ) as r:
            statuses.append((r.status, await r.text()))
    assert statuses == [(200, "ok")] * 4 + [(404, "used_url"), (404, "expired_url")]
    assert [e["text"] for e in sim.ephemerals("U0ALICE")] == ["again"] * 4


async def test_view_submission_errors_keep_the_modal_open(sim: SlackSim, bot: Bot) -> None:
    await sim.slash_command("U0ALICE", CH, "modal")
    [view] = sim.open_views("U0ALICE")
    result = await sim.submit_view("U0ALICE", view["id"], {"reason": {"reason_input": ""}})
    assert result.json() == {"response_action": "errors", "errors": {"reason": "Say why"}}
    [still] = sim.open_views("U0ALICE")
    assert still["errors"] == {"reason": "Say why"}
    await sim.submit_view(
        "U0ALICE",
        view["id"],
        {"reason": {"reason_input": "ECC"}, "count": {"n": 3}, "tier": {"t": "t2"}},
    )
    assert sim.open_views("U0ALICE") == []
    values = bot.bodies[-1]
    assert values["reason"]["reason_input"] == {"type": "plain_text_input", "value": "ECC"}
    assert values["count"]["n"] == {"type": "number_input", "value": "3"}
    assert values["tier"]["t"]["selected_option"]["value"] == "t2"


async def test_trigger_ids_are_single_use_and_expire(
    sim: SlackSim, bot: Bot, clock: Any, client: AsyncWebClient
) -> None:
    await sim.slash_command("U0ALICE", CH, "status")
    trigger = bot.bodies[-1]["trigger_id"]
    clock.now += 3.5
    with pytest.raises(SlackApiError) as err:
        await client.views_open(trigger_id=trigger, view=MODAL)
    assert err.value.response["error"] == "expired_trigger_id"
    await sim.slash_command("U0ALICE", CH, "modal")
    with pytest.raises(SlackApiError) as err:
        await client.views_open(trigger_id=bot.bodies[-1]["trigger_id"], view=MODAL)
    assert err.value.response["error"] == "exchanged_trigger_id"
    with pytest.raises(SlackApiError) as err:
        await client.views_open(trigger_id="nonsense", view=MODAL)
    assert err.value.response["error"] == "invalid_trigger_id"


async def test_views_push_stops_at_three_and_update_checks_hash(
    sim: SlackSim, bot: Bot, client: AsyncWebClient
) -> None:
    await sim.slash_command("U0ALICE", CH, "modal")
    for _ in range(2):
        await sim.slash_command("U0ALICE", CH, "status")
        await client.views_push(trigger_id=bot.bodies[-1]["trigger_id"], view=MODAL)
    await sim.slash_command("U0ALICE", CH, "status")
    with pytest.raises(SlackApiError) as err:
        await client.views_push(trigger_id=bot.bodies[-1]["trigger_id"], view=MODAL)
    assert err.value.response["error"] == "push_limit_reached"
    top = sim.open_views("U0ALICE")[-1]
    with pytest.raises(SlackApiError) as err:
        await client.views_update(view_id=top["id"], hash="stale.hash", view=MODAL)
    assert err.value.response["error"] == "hash_conflict"
    updated = await client.views_update(view_id=top["id"], hash=top["hash"], view=MODAL)
    assert updated["view"]["hash"] != top["hash"]


async def test_event_redelivery_carries_the_same_event_id(sim: SlackSim, bot: Bot) -> None:
    parent = await sim.post_user_message("U0CAROL", CH, "node-7 slow")
    await sim.post_user_message("U0ALICE", CH, "looking", thread_ts=parent, deliveries=3)
    assert len(bot.event_ids) == 4
    assert bot.event_ids[1] == bot.event_ids[2] == bot.event_ids[3] != bot.event_ids[0]
    retries = [d.retry_num for d in sim.deliveries]
    assert retries == [0, 0, 1, 2]
    assert all(d.result.status == 200 for d in sim.deliveries)


async def test_url_verification_is_answered_with_the_challenge(sim: SlackSim, bot: Bot) -> None:
    result = await sim.url_verification("3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P")
    assert (
        result.status == 200
        and "3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P" in result.body
    )
