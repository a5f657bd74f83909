"""The presenter renders on a worker thread, never on the event loop, and keeps what the
loop gave: each message is posted after its rendering, in order, and what a rendering
raises reaches the caller unchanged."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest

from bot.core.reporting.outcomes import notice
from bot.render.blocks import Message
from bot.render.notices import render_messages, render_told
from bot.services.locales import LocaleChooser
from bot.slack.presenter import SlackPresenter
from tests.services.fakes import FakeChat


def _recording(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Record the thread each rendering runs on (the real renderer still renders)."""
    threads: list[int] = []
    one, several = render_told, render_messages

    def render(told: Any, locale: str) -> Message:
        threads.append(threading.get_ident())
        return one(told, locale)

    def render_all(told: Any, locale: str) -> list[Message]:
        threads.append(threading.get_ident())
        return several(told, locale)

    monkeypatch.setattr("bot.slack.presenter.render_told", render)
    monkeypatch.setattr("bot.slack.presenter.render_messages", render_all)
    return threads


async def test_posts_and_updates_are_rendered_off_the_loop_and_posted_in_order(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    threads = _recording(monkeypatch)
    chat = FakeChat()
    presenter = SlackPresenter(chat, LocaleChooser(chat))
    loop_thread = threading.get_ident()
    nodes = [f"gpu-node-{i:02d}" for i in range(5)]

    posted = [
        await presenter.post("C1", notice("alert_resolved", alertname="Mem", node=n)) for n in nodes
    ]
    await presenter.update("C1", posted[0], notice("alert_resolved", alertname="Mem", node="x"))

    assert len(threads) == 6 and loop_thread not in threads
    texts = [chat.messages[ts].text for ts in posted[1:]]
    assert [next(n for n in nodes if n in t) for t in texts] == nodes[1:]
    assert "x" in chat.messages[posted[0]].text


async def test_what_a_rendering_raises_reaches_the_caller_and_nothing_is_posted(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def broken(told: Any, locale: str) -> list[Message]:
        raise KeyError("a template's missing key")

    monkeypatch.setattr("bot.slack.presenter.render_messages", broken)
    chat = FakeChat()
    presenter = SlackPresenter(chat, LocaleChooser(chat))

    with pytest.raises(KeyError, match="missing key"):
        await presenter.post("C1", notice("alert_resolved", alertname="Mem", node="n"))
    assert chat.messages == {}


async def test_the_loop_answers_while_a_slow_rendering_runs(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A rendering that takes long (as a large one does on a loaded machine) leaves the
    loop free: a task scheduled meanwhile runs before the rendering ends."""
    rendering = threading.Event()
    release = threading.Event()
    real = render_messages

    def slow(told: Any, locale: str) -> list[Message]:
        rendering.set()
        release.wait(60)
        return real(told, locale)

    monkeypatch.setattr("bot.slack.presenter.render_messages", slow)
    chat = FakeChat()
    presenter = SlackPresenter(chat, LocaleChooser(chat))
    post = asyncio.create_task(
        presenter.post("C1", notice("alert_resolved", alertname="Mem", node="n"))
    )
    await asyncio.to_thread(rendering.wait, 60)
    answered = await asyncio.wait_for(asyncio.sleep(0, result="ack"), 30)  # the loop runs
    assert not post.done()
    release.set()
    ts = await post
    assert answered == "ack" and "Mem" in chat.messages[ts].text
