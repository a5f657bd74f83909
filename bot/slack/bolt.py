"""The Bolt AsyncApp with every listener: the slash command and thread events
(``bot.slack.app``), the Home tab (``bot.slack.home``), the buttons and modals
(``bot.slack.interactions``)."""

from __future__ import annotations

from slack_bolt.async_app import AsyncApp
from slack_sdk.web.async_client import AsyncWebClient

from bot.services.chatops import BotServices
from bot.slack import app as commands_and_events
from bot.slack.home import register_home
from bot.slack.interactions import register_interactions


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
        client=client,
        signing_secret=signing_secret,
        request_verification_enabled=not socket_mode,
        process_before_response=False,
    )
    commands_and_events.register(app, services)
    register_home(app, services)
    if services.act is not None:
        register_interactions(app, services)
    return app
