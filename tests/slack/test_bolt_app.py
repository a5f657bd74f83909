"""The Bolt app is named as Bolt names it unnamed, without walking the stack for it."""

from __future__ import annotations

import inspect
from pathlib import Path

import pytest
from slack_sdk.web.async_client import AsyncWebClient

from bot.slack.bolt import build_app
from tests.services.world import bot_services, make_world


async def test_the_app_has_bolts_own_name_for_it_and_no_stack_is_walked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Unnamed, Bolt names an app after the file that constructs it (bot/slack/bolt.py), its
    listeners' logger name, found with ``inspect.stack()``: every frame's source read."""
    world = await make_world(tmp_path / "gpunode.db")

    def walked(*args: object, **kwargs: object) -> None:
        raise AssertionError("inspect.stack() was called")

    try:
        monkeypatch.setattr(inspect, "stack", walked)
        app = build_app(
            client=AsyncWebClient(token="xoxb-test"),
            signing_secret="bolt-name-secret",
            services=bot_services(world),
        )
    finally:
        await world.store.close()
    assert app.name == "bolt.py"
