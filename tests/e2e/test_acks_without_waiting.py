"""A slash command is acknowledged without waiting on Slack: not on a ``users.info`` that has
not answered (the answer follows in the person's language), and not on one ``auth.test`` or
one ``users.info`` per request when many arrive at once at a fresh bot."""

from __future__ import annotations

import asyncio
import json
import re

from gpunode_sandbox.demo import Demo, running_demo
from gpunode_sandbox.story import CHANNEL
from tests.e2e.conftest import text_of

LIWEI = "U0LIWEI"  # her Slack is in Simplified Chinese (zh-CN)
USERS = ("U0ALICE", "U0BOB", "U0CAROL")
CHINESE = re.compile(r"[\u4e00-\u9fff]")


async def test_a_command_is_acked_while_slack_keeps_the_persons_language_and_answered_in_it_after(
    demo: Demo,
) -> None:
    demo.slack.hold("users.info")  # Slack does not say li.wei's language yet

    acked = await demo.slack.slash_command(LIWEI, CHANNEL, "status")

    assert acked.status == 200
    assert acked.body == ""  # acked without words: the language they need is not known yet
    assert demo.slack.ephemerals(LIWEI) == []
    demo.slack.release("users.info")
    await demo.drain()
    (later,) = demo.slack.ephemerals(LIWEI)
    assert CHINESE.search(text_of(later))
    # the answer that followed is the one an ack carries once her language is known
    again = await demo.slack.slash_command(LIWEI, CHANNEL, "status")
    assert json.loads(again.body)["text"] == later["text"]


async def test_a_fresh_bots_first_burst_asks_slack_who_it_is_once_and_each_persons_language_once(
    demo: Demo,
) -> None:
    commands = [demo.slack.slash_command(USERS[i % 3], CHANNEL, "status") for i in range(40)]

    results = await asyncio.gather(*commands)
    await demo.drain()

    assert [r.status for r in results] == [200] * 40
    assert all(json.loads(r.body)["text"] for r in results)  # each answered in its ack
    calls = demo.slack.calls
    assert [c.method for c in calls].count("auth.test") <= 1  # over HTTP: none at all
    assert sorted(_locale_lookups(demo)) == sorted(USERS)


async def test_over_socket_mode_a_fresh_bots_first_burst_asks_slack_who_it_is_once() -> None:
    async with running_demo("seed", socket_mode=True) as sock:
        before = [c.method for c in sock.slack.calls].count("auth.test")
        commands = [sock.slack.slash_command(USERS[i % 3], CHANNEL, "status") for i in range(40)]

        results = await asyncio.gather(*commands)
        await sock.drain()

        assert [r.status for r in results] == [200] * 40
        assert [c.method for c in sock.slack.calls].count("auth.test") - before == 1
        assert sorted(_locale_lookups(sock)) == sorted(USERS)


def _locale_lookups(demo: Demo) -> list[str]:
    """Whose language the bot asked Slack for (``users.info`` with ``include_locale``)."""
    return [
        str(c.args["user"])
        for c in demo.slack.calls
        if c.method == "users.info" and "include_locale" in c.args
    ]
