"""The Bolt AsyncApp with every listener: the slash command and thread events
(``bot.slack.app``), the Home tab (``bot.slack.home``), the buttons and modals
(``bot.slack.interactions``)."""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import Awaitable, Callable

from slack_bolt.async_app import AsyncApp
from slack_bolt.middleware.authorization.async_single_team_authorization import (
    AsyncSingleTeamAuthorization,
)
from slack_bolt.request.async_request import AsyncBoltRequest
from slack_bolt.response import BoltResponse
from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from bot.services.chatops import BotServices
from bot.slack import app as commands_and_events
from bot.slack.home import register_home
from bot.slack.interactions import register_interactions

#: the app's name, its listeners' logger name: the one Bolt gives it unnamed (the file that
#: constructs it, this one), which it finds with ``inspect.stack()``: the source file of every
#: frame on the stack read, and every loaded module searched for each (measured in a test
#: process: 6 ms of CPU an app over the first ten, 1 ms each after)
APP_NAME = os.path.basename(__file__)


def build_app(
    *,
    client: AsyncWebClient,
    signing_secret: str | None,
    services: BotServices,
    socket_mode: bool = False,
) -> AsyncApp:
    """In Socket Mode the request signature is not verified (Slack's socket authenticates);
    over HTTP it is, by Bolt, after ``bot.slack.edge`` has checked it on the raw bytes."""
    app = AsyncApp(
        name=APP_NAME,
        client=client,
        signing_secret=signing_secret,
        request_verification_enabled=not socket_mode,
        process_before_response=False,
    )
    share_auth_test(app)
    commands_and_events.register(app, services)
    register_home(app, services)
    if services.act is not None:
        register_interactions(app, services)
    return app


class OneAuthTest(AsyncSingleTeamAuthorization):
    """Bolt's single-workspace authorization, with one ``auth.test`` for every request.

    Bolt's own asks ``auth.test`` in every request that arrives before the first answer is
    in, and Slack's 3 s for the ack count from the request: a fresh bot's first burst (forty
    slash commands at once) made forty calls, and under load none of them was acked in time.
    Here the first request asks and the others wait for its answer; a failed one is asked
    again by Bolt's own code, which answers the failure as before."""

    _asking: asyncio.Lock | None = None

    async def async_process(
        self,
        *,
        req: AsyncBoltRequest,
        resp: BoltResponse,
        next: Callable[[], Awaitable[BoltResponse]],
    ) -> BoltResponse:
        if self.auth_test_result is None:
            if self._asking is None:
                self._asking = asyncio.Lock()
            async with self._asking:
                if self.auth_test_result is None:
                    with contextlib.suppress(SlackApiError):
                        self.auth_test_result = await req.context.client.auth_test()
        return await super().async_process(req=req, resp=resp, next=next)


def share_auth_test(app: AsyncApp) -> None:
    """Put ``OneAuthTest`` in the place of Bolt's single-workspace authorization (a test
    counts the ``auth.test`` calls of a fresh bot's first burst, so a Bolt that moves it is
    noticed)."""
    chain = app._async_middleware_list  # Bolt takes no authorization middleware of ours
    for i, middleware in enumerate(chain):
        if type(middleware) is AsyncSingleTeamAuthorization:
            chain[i] = OneAuthTest(base_logger=app.logger)
