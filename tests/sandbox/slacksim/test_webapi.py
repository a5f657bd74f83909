"""Web API behaviour through slack_sdk's AsyncWebClient over real HTTP."""

from __future__ import annotations

from typing import Any

import pytest
from slack_sdk.errors import SlackApiError
from slack_sdk.http_retry.builtin_async_handlers import AsyncRateLimitErrorRetryHandler
from slack_sdk.web.async_client import AsyncWebClient

from gpunode_sandbox.slacksim import SlackSim

CH = "C0INCIDENT"


def actions(**button: object) -> list[dict[str, object]]:
    element = {"type": "button", "action_id": "a", "text": {"type": "plain_text", "text": "b"}}
    return [{"type": "actions", "elements": [{**element, **button}]}]


def section(text: str) -> dict[str, object]:
    return {"type": "section", "text": {"type": "mrkdwn", "text": text}}


async def test_auth_test_answers_with_bot_identity_and_scopes(client: AsyncWebClient) -> None:
    resp = await client.auth_test()
    assert resp["user_id"] == "U0GPUNODE" and resp["bot_id"].startswith("B")
    assert "chat:write" in resp.headers["x-oauth-scopes"]


async def test_a_non_bot_token_is_invalid_auth(sim: SlackSim) -> None:
    bad = AsyncWebClient(token="xoxp-user", base_url=sim.api_url)
    with pytest.raises(SlackApiError) as err:
        await bad.auth_test()
    assert err.value.response["error"] == "invalid_auth"


async def test_posted_blocks_get_block_ids_and_text_flags(client: AsyncWebClient) -> None:
    blocks: list[dict[str, Any]] = [
        section("*hi*"),
        {"type": "header", "text": {"type": "plain_text", "text": "H"}},
    ]
    resp = await client.chat_postMessage(channel=CH, text="hi", blocks=blocks)
    stored = resp["message"]["blocks"]
    assert all(b["block_id"] for b in stored)
    assert stored[0]["text"]["verbatim"] is False
    assert stored[1]["text"]["emoji"] is True


@pytest.mark.parametrize(
    ("blocks", "pointer"),
    [
        ([section("x" * 3001)], "/blocks/0/text/text"),
        ([section("ok")] * 51, "/blocks"),
        (
            [{"type": "section", "fields": [{"type": "mrkdwn", "text": "f" * 2001}]}],
            "/blocks/0/fields/0/text",
        ),
        ([{"type": "header", "text": {"type": "mrkdwn", "text": "h"}}], "/blocks/0/text/type"),
        (actions(text={"type": "plain_text", "text": "b" * 76}), "/blocks/0/elements/0/text/text"),
        (actions(style="loud"), "/blocks/0/elements/0/style"),
        (actions(value="v" * 2001), "/blocks/0/elements/0/value"),
        ([{"type": "bogus"}], "/blocks/0/type"),
    ],
)
async def test_invalid_blocks_name_the_offending_json_pointer(
    client: AsyncWebClient, blocks: list[dict[str, object]], pointer: str
) -> None:
    with pytest.raises(SlackApiError) as err:
        await client.chat_postMessage(channel=CH, text="t", blocks=blocks)
    assert err.value.response["error"] == "invalid_blocks"
    messages = err.value.response["response_metadata"]["messages"]
    assert any(m.endswith(f"[json-pointer:{pointer}]") for m in messages), messages


async def test_a_message_without_text_or_blocks_is_no_text(client: AsyncWebClient) -> None:
    with pytest.raises(SlackApiError) as err:
        await client.api_call("chat.postMessage", json={"channel": CH, "text": ""})
    assert err.value.response["error"] == "no_text"


async def test_update_over_4000_characters_is_msg_too_long(client: AsyncWebClient) -> None:
    ts = (await client.chat_postMessage(channel=CH, text="short"))["ts"]
    with pytest.raises(SlackApiError) as err:
        await client.chat_update(channel=CH, ts=ts, text="x" * 4001)
    assert err.value.response["error"] == "msg_too_long"


async def test_unknown_channel_is_channel_not_found(client: AsyncWebClient) -> None:
    with pytest.raises(SlackApiError) as err:
        await client.chat_postMessage(channel="C0NOPE", text="x")
    assert err.value.response["error"] == "channel_not_found"


async def test_thread_replies_maintain_parent_counts(client: AsyncWebClient, sim: SlackSim) -> None:
    parent = (await client.chat_postMessage(channel=CH, text="incident"))["ts"]
    await client.chat_postMessage(channel=CH, text="r1", thread_ts=parent)
    await sim.post_user_message("U0ALICE", CH, "looking", thread_ts=parent)
    resp = await client.conversations_replies(channel=CH, ts=parent)
    msgs = resp["messages"]
    assert [m["text"] for m in msgs] == ["incident", "r1", "looking"]
    assert msgs[0]["reply_count"] == 2
    assert msgs[0]["reply_users"] == ["U0GPUNODE", "U0ALICE"]
    assert msgs[0]["latest_reply"] == msgs[2]["ts"]
    assert msgs[2]["parent_user_id"] == "U0GPUNODE"
    assert [m["ts"] for m in sim.messages(CH)] == [parent]


async def test_ephemerals_are_not_updatable(client: AsyncWebClient, sim: SlackSim) -> None:
    resp = await client.chat_postEphemeral(channel=CH, user="U0DAVE", text="only you")
    assert [e["text"] for e in sim.ephemerals("U0DAVE")] == ["only you"]
    with pytest.raises(SlackApiError) as err:
        await client.chat_update(channel=CH, ts=resp["message_ts"], text="changed")
    assert err.value.response["error"] == "message_not_found"


async def test_rate_limited_calls_are_retried_after_retry_after(
    client: AsyncWebClient, sim: SlackSim
) -> None:
    sim.rate_limit("chat.postMessage", times=1)
    with pytest.raises(SlackApiError) as err:
        await client.chat_postMessage(channel=CH, text="x")
    assert err.value.response.status_code == 429
    assert err.value.response.headers["Retry-After"] == "1"
    sim.rate_limit("chat.postMessage", times=1)
    client.retry_handlers.append(AsyncRateLimitErrorRetryHandler(max_retry_count=1))
    resp = await client.chat_postMessage(channel=CH, text="x")
    assert resp["ok"]
    assert [c.error for c in sim.calls if c.method == "chat.postMessage"] == [
        "ratelimited",
        "ratelimited",
        None,
    ]


async def test_fault_knob_returns_fatal_error(client: AsyncWebClient, sim: SlackSim) -> None:
    sim.fail("users.info")
    with pytest.raises(SlackApiError) as err:
        await client.users_info(user="U0ALICE")
    assert err.value.response["error"] == "fatal_error"
    assert (await client.users_info(user="U0ALICE"))["user"]["name"] == "alice"


async def test_usergroup_members_are_listed(client: AsyncWebClient, sim: SlackSim) -> None:
    sim.add_usergroup("S0LEADS", "sre-leads", ["U0BOB"])
    assert (await client.usergroups_users_list(usergroup="S0LEADS"))["users"] == ["U0BOB"]
    with pytest.raises(SlackApiError) as err:
        await client.usergroups_users_list(usergroup="S0NONE")
    assert err.value.response["error"] == "no_such_subteam"


async def test_files_upload_v2_shares_content_into_the_thread(
    client: AsyncWebClient, sim: SlackSim
) -> None:
    parent = (await client.chat_postMessage(channel=CH, text="incident"))["ts"]
    resp = await client.files_upload_v2(
        channel=CH,
        thread_ts=parent,
        content="evidence json",
        filename="evidence.json",
        title="Evidence",
        initial_comment="bundle",
    )
    assert resp["file"]["title"] == "Evidence"
    [shared] = sim.files(CH)
    assert shared["content"] == b"evidence json" and shared["thread_ts"] == parent
    assert "[file evidence.json]" in sim.text_of_thread(CH, parent)
