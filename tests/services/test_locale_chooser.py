"""LocaleChooser gathers the inputs of bot.core.model.locales: the channel override, the thread's
kept locale and the person's Slack locale (asked only when it can matter)."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

import pytest

from bot.core.model.clusters import DEFAULT_CLUSTER
from bot.core.model.incidents import Incident
from bot.services.locales import LocaleChooser
from tests.services.fakes import FakeChat

T0 = datetime(2026, 3, 1, tzinfo=UTC)


def incident(channel: str, locale: str) -> Incident:
    return Incident(
        id="INC-0001",
        number=1,
        node="n1",
        channel=channel,
        opened_at=T0,
        opened_by="U1",
        locale=locale,
        cluster=DEFAULT_CLUSTER,
    )


class CountingChat(FakeChat):
    def __init__(self) -> None:
        super().__init__()
        self.asked: list[str] = []

    async def user_locale(self, user_id: str) -> str | None:
        self.asked.append(user_id)
        return await super().user_locale(user_id)


@pytest.fixture
def chat() -> CountingChat:
    c = CountingChat()
    c.locales = {"U0LIWEI": "zh-CN", "U0ALICE": "en-US", "U0MEI": "zh-TW"}
    return c


@pytest.mark.parametrize(
    ("overrides", "channel", "user", "person", "opening"),
    [
        ({}, "C1", "U0LIWEI", "zh-CN", "zh-CN"),
        ({}, "C1", "U0ALICE", "en", "en"),
        ({}, "C1", "U0MEI", "en", "en"),  # Traditional Chinese: not spoken, English
        ({}, "C1", "U0UNKNOWN", "en", "en"),
        ({"C1": "en"}, "C1", "U0LIWEI", "en", "en"),
        ({"C1": "zh-CN"}, "C1", "U0ALICE", "zh-CN", "zh-CN"),
        ({"C2": "en"}, "C1", "U0LIWEI", "zh-CN", "zh-CN"),
    ],
)
async def test_people_and_new_threads_get_the_channels_language_else_the_persons(
    chat: CountingChat,
    overrides: dict[str, str],
    channel: str,
    user: str,
    person: str,
    opening: str,
) -> None:
    chooser = LocaleChooser(chat, channel_locales=overrides)
    assert await chooser.for_person(channel, user) == person
    assert await chooser.for_opening(channel, user) == opening


async def test_a_channel_override_spares_the_users_info_call(chat: CountingChat) -> None:
    chooser = LocaleChooser(chat, channel_locales={"C1": "en"})
    await chooser.for_person("C1", "U0LIWEI")
    await chooser.for_opening("C1", "U0LIWEI")
    assert chat.asked == []


@pytest.mark.parametrize("actor", ["gpunode", "alertmanager", ""])
async def test_machine_actors_have_no_slack_locale_to_ask_for(
    chat: CountingChat, actor: str
) -> None:
    assert await LocaleChooser(chat).for_opening("C1", actor) == "en"
    assert chat.asked == []


@pytest.mark.parametrize(
    ("overrides", "kept", "expected"),
    [
        ({}, "zh-CN", "zh-CN"),
        ({}, "en", "en"),
        ({"C1": "en"}, "zh-CN", "en"),
        ({"C1": "zh-CN"}, "en", "zh-CN"),
    ],
)
def test_thread_posts_follow_the_thread_unless_the_channel_overrides(
    chat: CountingChat, overrides: dict[str, str], kept: str, expected: str
) -> None:
    chooser = LocaleChooser(chat, channel_locales=overrides)
    assert chooser.for_thread(incident("C1", kept)) == expected
    assert chat.asked == []  # no I/O: the thread's locale is stored


async def test_a_slow_lookup_is_given_up_for_the_default_language() -> None:
    class SlowChat(FakeChat):
        async def user_locale(self, user_id: str) -> str | None:
            await asyncio.sleep(10)
            return "zh-CN"

    chooser = LocaleChooser(SlowChat(), timeout_s=0.01)
    assert await chooser.for_person("C1", "U0LIWEI") == "en"


async def test_an_ack_does_not_wait_for_a_lookup_that_is_slow_to_answer() -> None:
    answer = asyncio.Event()

    class HeldChat(FakeChat):
        async def user_locale(self, user_id: str) -> str | None:
            await answer.wait()
            return "zh-CN"

    chooser = LocaleChooser(HeldChat(), channel_locales={"C2": "en"})
    assert await chooser.for_person_promptly("C1", "U0LIWEI", within_s=0.01) is None
    assert await chooser.for_person_promptly("C2", "U0LIWEI", within_s=0.01) == "en"
    answer.set()
    assert await chooser.for_person_promptly("C1", "U0LIWEI", within_s=30) == "zh-CN"
