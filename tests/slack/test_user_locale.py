"""SlackChat.user_locale: ``users.info`` with ``include_locale``, cached per person for the TTL;
a lookup that fails is None (the default language) and is logged by code, never with a token."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator

import pytest

from bot.slack.chatting import SlackChat, make_client
from gpunode_sandbox.slacksim import SlackSim

TOKEN = "xoxb-sim-secret-token-1234"


@pytest.fixture
async def sim() -> AsyncIterator[SlackSim]:
    s = SlackSim(signing_secret="s", bot_token=TOKEN)
    await s.start()
    yield s
    await s.stop()


def _lookups(sim: SlackSim, user: str) -> list[object]:
    return [
        c.args.get("include_locale")
        for c in sim.calls
        if c.method == "users.info" and c.args.get("user") == user
    ]


async def test_a_persons_locale_is_read_with_include_locale_and_cached(sim: SlackSim) -> None:
    chat = SlackChat(make_client(TOKEN, base_url=sim.api_url), locale_ttl_s=3600)
    assert await chat.user_locale("U0LIWEI") == "zh-CN"
    assert await chat.user_locale("U0LIWEI") == "zh-CN"
    assert await chat.user_locale("U0ALICE") == "en-US"
    assert _lookups(sim, "U0LIWEI") == ["1"]  # once, with include_locale (slack_sdk sends 1)


async def test_after_the_ttl_the_locale_is_read_again(sim: SlackSim) -> None:
    chat = SlackChat(make_client(TOKEN, base_url=sim.api_url), locale_ttl_s=0)
    await chat.user_locale("U0LIWEI")
    sim.ws.users["U0LIWEI"].locale = "en-GB"  # the person switched Slack to English
    assert await chat.user_locale("U0LIWEI") == "en-GB"
    assert len(_lookups(sim, "U0LIWEI")) == 2


@pytest.mark.parametrize(
    ("setup", "user", "code"),
    [
        ("revoke", "U0LIWEI", "missing_scope"),
        ("none", "U0NOBODY", "user_not_found"),
    ],
)
async def test_a_failed_lookup_is_the_default_and_logged_by_code_without_the_token(
    sim: SlackSim, caplog: pytest.LogCaptureFixture, setup: str, user: str, code: str
) -> None:
    if setup == "revoke":
        sim.api.revoke_scope("users:read")
    chat = SlackChat(make_client(TOKEN, base_url=sim.api_url))
    with caplog.at_level(logging.WARNING, logger="bot.slack.chatting"):
        assert await chat.user_locale(user) is None
        assert await chat.user_locale(user) is None  # remembered: Slack is not asked again
    assert len(_lookups(sim, user)) == 1
    assert code in caplog.text
    assert TOKEN not in caplog.text


async def test_people_asking_at_once_share_one_lookup_each(sim: SlackSim) -> None:
    chat = SlackChat(make_client(TOKEN, base_url=sim.api_url))
    people = ["U0LIWEI", "U0ALICE"] * 10

    found = await asyncio.gather(*(chat.user_locale(p) for p in people))

    assert found == ["zh-CN", "en-US"] * 10
    assert len(_lookups(sim, "U0LIWEI")) == 1
    assert len(_lookups(sim, "U0ALICE")) == 1


async def test_a_caller_that_stops_waiting_leaves_the_lookup_to_finish_for_the_next(
    sim: SlackSim,
) -> None:
    chat = SlackChat(make_client(TOKEN, base_url=sim.api_url))
    sim.hold("users.info")
    with pytest.raises(TimeoutError):
        async with asyncio.timeout(0.05):
            await chat.user_locale("U0LIWEI")

    sim.release("users.info")

    assert await chat.user_locale("U0LIWEI") == "zh-CN"
    assert len(_lookups(sim, "U0LIWEI")) == 1  # the next caller got the first lookup's answer
