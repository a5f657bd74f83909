"""pins.* and views.publish through slack_sdk over real HTTP, and a signed app_home_opened
event to a Bolt app: as strict as Slack's method and event references."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from aiohttp import web
from slack_bolt.async_app import AsyncApp
from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from gpunode_sandbox.slacksim import SlackSim
from gpunode_sandbox.slacksim.methods_home import PINS_MAX

CH = "C0INCIDENT"


def section(text: str) -> dict[str, Any]:
    return {"type": "section", "text": {"type": "mrkdwn", "text": text}}


def home(*blocks: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"type": "home", "blocks": list(blocks) or [section("hi")], **extra}


async def error_of(call: Awaitable[Any]) -> dict[str, Any]:
    with pytest.raises(SlackApiError) as err:
        await call
    return dict(err.value.response.data)  # type: ignore[arg-type]


async def test_a_pinned_message_is_listed_and_marked_pinned_to_its_channel(
    sim: SlackSim, client: AsyncWebClient
) -> None:
    ts = (await client.chat_postMessage(channel=CH, text="current state"))["ts"]
    await client.pins_add(channel=CH, timestamp=ts)
    sim.api.scopes.append("pins:read")

    listed = await client.pins_list(channel=CH)

    assert [i["message"]["ts"] for i in listed["items"]] == [ts]
    assert listed["items"][0]["type"] == "message"
    assert listed["items"][0]["created_by"] == "U0GPUNODE"
    assert sim.message(CH, ts)["pinned_to"] == [CH]  # type: ignore[index]
    assert sim.pinned(CH) == [ts]


async def test_pinning_twice_is_already_pinned_and_unpinning_twice_is_not_pinned(
    client: AsyncWebClient,
) -> None:
    ts = (await client.chat_postMessage(channel=CH, text="state"))["ts"]
    await client.pins_add(channel=CH, timestamp=ts)
    assert (await error_of(client.pins_add(channel=CH, timestamp=ts)))["error"] == "already_pinned"
    await client.pins_remove(channel=CH, timestamp=ts)
    gone = await error_of(client.pins_remove(channel=CH, timestamp=ts))
    assert gone["error"] == "not_pinned"


@pytest.mark.parametrize(
    ("args", "error"),
    [
        ({"channel": "C0NOWHERE", "timestamp": "1700000000.000001"}, "channel_not_found"),
        ({"channel": CH}, "no_item_specified"),
        ({"channel": CH, "timestamp": "yesterday"}, "bad_timestamp"),
        ({"channel": CH, "timestamp": "1600000000.000001"}, "message_not_found"),
    ],
)
async def test_pins_add_names_what_is_wrong_with_its_arguments(
    client: AsyncWebClient, args: dict[str, str], error: str
) -> None:
    assert (await error_of(client.pins_add(**args)))["error"] == error


async def test_pins_need_the_pins_write_scope(sim: SlackSim, client: AsyncWebClient) -> None:
    ts = (await client.chat_postMessage(channel=CH, text="state"))["ts"]
    sim.api.revoke_scope("pins:write")

    refused = await error_of(client.pins_add(channel=CH, timestamp=ts))

    assert refused["error"] == "missing_scope" and refused["needed"] == "pins:write"
    assert (await error_of(client.pins_list(channel=CH)))["needed"] == "pins:read"


async def test_a_channel_holds_at_most_its_pin_limit_and_a_deleted_message_is_unpinned(
    sim: SlackSim, client: AsyncWebClient
) -> None:
    posted = [(await client.chat_postMessage(channel=CH, text=f"m{i}"))["ts"] for i in range(3)]
    for ts in posted:
        await client.pins_add(channel=CH, timestamp=ts)
    sim.ws.pins[CH] *= PINS_MAX  # the same three pins many times over: the channel is full
    extra = (await client.chat_postMessage(channel=CH, text="one more"))["ts"]
    assert (await error_of(client.pins_add(channel=CH, timestamp=extra)))["error"] == (
        "too_many_pins"
    )

    sim.ws.pins[CH] = sim.ws.pins[CH][:3]
    await client.chat_delete(channel=CH, ts=posted[0])
    assert sim.pinned(CH) == posted[1:]


async def test_views_publish_stores_a_home_view_and_keeps_its_id(
    sim: SlackSim, client: AsyncWebClient
) -> None:
    first = (await client.views_publish(user_id="U0ALICE", view=home(section("one"))))["view"]
    again = await client.views_publish(
        user_id="U0ALICE", view=home(section("two")), hash=first["hash"]
    )

    assert again["view"]["id"] == first["id"] and again["view"]["hash"] != first["hash"]
    shown = sim.home("U0ALICE")
    assert shown is not None and shown["blocks"][0]["text"]["text"] == "two"
    assert shown["blocks"][0]["block_id"]  # Slack assigns block ids
    stale = await error_of(client.views_publish(user_id="U0ALICE", view=home(), hash=first["hash"]))
    assert stale["error"] == "hash_conflict"


@pytest.mark.parametrize(
    ("view", "pointer"),
    [
        ({"type": "modal", "blocks": [section("x")]}, "/view/type"),
        (home(title={"type": "plain_text", "text": "Home"}), "/view/title"),
        (home(submit={"type": "plain_text", "text": "Go"}), "/view/submit"),
        (home(*[section("x")] * 101), "/view/blocks"),
        (home(section("x" * 3001)), "/view/blocks/0/text/text"),
    ],
)
async def test_views_publish_refuses_what_slack_refuses(
    client: AsyncWebClient, view: dict[str, Any], pointer: str
) -> None:
    refused = await error_of(client.views_publish(user_id="U0ALICE", view=view))
    assert refused["error"] == "invalid_arguments"
    assert any(pointer in m for m in refused["response_metadata"]["messages"])


async def test_views_publish_needs_a_real_user_and_an_enabled_home_tab(
    sim: SlackSim, client: AsyncWebClient
) -> None:
    nobody = await error_of(client.views_publish(user_id="U0NOBODY", view=home()))
    assert nobody["response_metadata"]["messages"] == ["invalid `user_id`"]
    sim.ws.home_tab_enabled = False
    assert (await error_of(client.views_publish(user_id="U0ALICE", view=home())))["error"] == (
        "not_enabled"
    )


async def test_opening_the_home_tab_sends_a_signed_app_home_opened_event(
    sim: SlackSim, client: AsyncWebClient, secret: str, serve: Callable[..., Awaitable[str]]
) -> None:
    seen: list[dict[str, Any]] = []
    app = AsyncApp(client=client, signing_secret=secret, process_before_response=True)

    @app.event("app_home_opened")
    async def opened(event: dict[str, Any]) -> None:
        seen.append(event)

    app_server: web.Application = app.web_app()
    sim.set_request_url(await serve(app_server))
    first = await sim.open_home("U0CAROL")
    await client.views_publish(user_id="U0CAROL", view=home(section("mine")))
    await sim.open_home("U0CAROL")

    assert first[0].status == 200  # Bolt verified the signature
    assert [e["tab"] for e in seen] == ["home", "home"]
    assert seen[0]["user"] == "U0CAROL" and seen[0]["channel"].startswith("D")
    assert "view" not in seen[0]  # nothing published yet
    assert seen[1]["view"]["blocks"][0]["text"]["text"] == "mine"
