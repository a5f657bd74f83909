"""A command typed in the console before the bot is wired (``gpunode demo`` serves the page
about 2 s before its bot): when the bot never comes within the hold, Chromium shows that the
bot is still starting and puts the command back in the box, instead of "bot unreachable: no
request URL: call sim.set_request_url(url)".

The Slack stand-in runs alone (no bot, no request URL) on a thread of its own with its own
event loop, since Playwright's sync API needs the test's thread free of a running loop.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from typing import Any

import pytest
from playwright.sync_api import expect

from gpunode_sandbox.slacksim import SlackSim
from gpunode_sandbox.slacksim.console_labels import labels

#: the console's hold in this test: short, the page's words are what is checked
HOLD_S = 0.5
START_TIMEOUT_S = 30.0


class BotlessConsole:
    """A SlackSim whose bot never comes, on a background thread; ``url`` once started."""

    def __init__(self) -> None:
        self.url = ""
        self._ready = threading.Event()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._thread = threading.Thread(target=asyncio.run, args=(self._main(),), daemon=True)

    async def _main(self) -> None:
        self._loop, self._stop = asyncio.get_running_loop(), asyncio.Event()
        sim = SlackSim(signing_secret="s")
        sim.console_hold_s = HOLD_S
        self.url = await sim.start()
        self._ready.set()
        try:
            await self._stop.wait()
        finally:
            await sim.stop()

    def __enter__(self) -> str:
        self._thread.start()
        if not self._ready.wait(START_TIMEOUT_S):
            raise RuntimeError("the Slack stand-in did not start")
        return self.url

    def __exit__(self, *_exc: object) -> None:
        if self._loop is not None and self._stop is not None:
            self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(START_TIMEOUT_S)


@pytest.fixture
def botless_console() -> Iterator[str]:
    with BotlessConsole() as url:
        yield url


def test_a_command_before_the_bot_is_wired_says_still_starting_and_keeps_the_command(
    botless_console: str, page: Any
) -> None:  # the page closes before the stand-in stops
    page.goto(botless_console + "/")
    box = page.get_by_test_id("command-input")
    box.fill("/gpunode diagnose gpu-node-01")
    box.press("Enter")
    starting = labels("en")["starting"].format(text="diagnose gpu-node-01")
    expect(page.get_by_test_id("command-status")).to_have_text(starting)
    expect(box).to_have_value("diagnose gpu-node-01")
