"""The Home tab: on ``app_home_opened`` (tab ``home``) gpunode publishes that person's Home
(``views.publish``): open incidents, the approvals they may decide, recent diagnoses, in
their language (``bot.services.home``, worded by ``bot.render.home``).

The event is acked by Bolt before the listener runs; the reads and the publish go to
``Background``. A Home that cannot be published is logged: nothing else depends on it.
"""

from __future__ import annotations

import logging
from typing import Any

from slack_bolt.async_app import AsyncApp
from slack_sdk.errors import SlackApiError, SlackClientError
from slack_sdk.web.async_client import AsyncWebClient

from bot.errors import GpunodeError
from bot.render.home import render_home
from bot.services.chatops import BotServices
from bot.services.home import home_summary

log = logging.getLogger(__name__)


async def publish_home(s: BotServices, client: AsyncWebClient, user: str) -> None:
    """Publish ``user``'s Home as it is now."""
    try:
        locale = await s.diagnose.locales.for_person("", user)
        view = render_home(await home_summary(s, user), locale)
        await client.views_publish(user_id=user, view=view)
    except (SlackApiError, SlackClientError) as err:
        log.warning("the Home tab of %s was not published: %s", user, err)
    except GpunodeError as err:
        log.warning("the Home tab of %s could not be gathered: %s", user, err.code)


def register_home(app: AsyncApp, s: BotServices) -> None:
    @app.event("app_home_opened")
    async def on_home_opened(event: dict[str, Any], client: AsyncWebClient) -> None:
        if event.get("tab") != "home":  # the Messages tab: nothing to publish
            return
        user = str(event.get("user", ""))
        s.bg.spawn(publish_home(s, client, user), name="home")
