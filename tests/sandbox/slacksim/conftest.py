"""Fixtures: a running SlackSim and a minimal Bolt app served over real HTTP on 127.0.0.1."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable

import pytest
from aiohttp import web
from slack_sdk.web.async_client import AsyncWebClient

from gpunode_sandbox.slacksim import SlackSim

SECRET = "test-signing-secret"


class Clock:
    """A settable clock for trigger expiry and response_url age."""

    def __init__(self, now: float = 1_700_000_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
async def sim(clock: Clock) -> AsyncIterator[SlackSim]:
    s = SlackSim(signing_secret=SECRET, clock=clock)
    await s.start()
    yield s
    await s.stop()


@pytest.fixture
def client(sim: SlackSim) -> AsyncWebClient:
    return AsyncWebClient(token="xoxb-test", base_url=sim.api_url)


@pytest.fixture
def secret() -> str:
    return SECRET


@pytest.fixture
async def serve() -> AsyncIterator[Callable[[web.Application], Awaitable[str]]]:
    """Serve an aiohttp app on a free port; returns its /slack/events URL."""
    runners: list[web.AppRunner] = []

    async def start(app: web.Application) -> str:
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        runners.append(runner)
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        return f"http://127.0.0.1:{runner.addresses[0][1]}/slack/events"

    yield start
    for runner in runners:
        await runner.cleanup()
