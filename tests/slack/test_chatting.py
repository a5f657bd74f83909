"""SlackChat turns every Web API failure into SlackError, and retries rate limits."""

from __future__ import annotations

import pytest

from bot.errors import SlackError
from bot.slack.chatting import SlackChat, make_client
from gpunode_sandbox.slacksim import SlackSim
from tests.ports import refusing_port


async def test_an_unreachable_slack_is_a_slack_error_not_an_aiohttp_one() -> None:
    with refusing_port() as port:
        client = make_client("xoxb-test", base_url=f"http://127.0.0.1:{port}/api/")
        chat = SlackChat(client)
        with pytest.raises(SlackError, match=r"chat\.postMessage failed"):
            await chat.post("C1", text="hi", blocks=[], thread_ts=None)


async def test_an_api_error_is_a_slack_error_with_slacks_code() -> None:
    sim = SlackSim(signing_secret="s")
    await sim.start()
    try:
        chat = SlackChat(make_client("xoxb-sim", base_url=sim.api_url))
        with pytest.raises(SlackError) as err:
            await chat.post("C0NOPE", text="hi", blocks=[], thread_ts=None)
        assert err.value.code == "channel_not_found"
    finally:
        await sim.stop()


async def test_a_rate_limited_call_is_retried_after_retry_after() -> None:
    sim = SlackSim(signing_secret="s")
    await sim.start()
    try:
        chat = SlackChat(make_client("xoxb-sim", base_url=sim.api_url))
        sim.rate_limit("chat.postMessage", times=1)
        ts = await chat.post("C0INCIDENT", text="hi", blocks=[], thread_ts=None)
        assert ts
        errors = [c.error for c in sim.calls if c.method == "chat.postMessage"]
        assert errors == ["ratelimited", None]
    finally:
        await sim.stop()


async def test_user_group_members_are_cached_for_the_ttl() -> None:
    sim = SlackSim(signing_secret="s")
    await sim.start()
    try:
        chat = SlackChat(make_client("xoxb-sim", base_url=sim.api_url), cache_ttl_s=300)
        first = await chat.usergroup_members("S0ONCALL")
        second = await chat.usergroup_members("S0ONCALL")
        assert first == second == ["U0ALICE"]
        assert [c.method for c in sim.calls].count("usergroups.users.list") == 1
    finally:
        await sim.stop()


async def test_a_shared_session_client_makes_every_call_on_one_session_and_closes_it() -> None:
    sim = SlackSim(signing_secret="s")
    await sim.start()
    client = make_client("xoxb-sim", base_url=sim.api_url, share_session=True)
    try:
        chat = SlackChat(client)
        await chat.post("C0INCIDENT", text="one", blocks=[], thread_ts=None)
        session = client.session
        await chat.post("C0INCIDENT", text="two", blocks=[], thread_ts=None)
        assert session is not None and client.session is session and not session.closed
    finally:
        await client.close()
        await sim.stop()
    assert session.closed and client.session is None
