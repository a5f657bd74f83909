"""In-memory stand-ins for the two ports, for the use-case tests.

``FakeKube`` (in ``fake_kube``) implements ``KubePort``; ``FakeChat`` implements
``ChatPort``: messages by ts (with their edit history), ephemerals, modals, uploads; user
groups from a dict.
"""

from __future__ import annotations

import asyncio
import itertools
from dataclasses import dataclass, field
from typing import Any

from bot.errors import SlackError
from tests.services.fake_kube import Budget, Call, FakeKube, load_scenario

__all__ = ["Budget", "Call", "Ephemeral", "FakeChat", "FakeKube", "Posted", "load_scenario"]


@dataclass
class Posted:
    channel: str
    ts: str
    text: str
    blocks: list[dict[str, Any]]
    thread_ts: str | None
    edits: list[tuple[str, list[dict[str, Any]]]] = field(default_factory=list)


@dataclass
class Ephemeral:
    channel: str
    user: str
    text: str
    blocks: list[dict[str, Any]]
    thread_ts: str | None


class FakeChat:
    """ChatPort in memory. ``messages`` by ts; ``thread(ts)`` lists replies in order."""

    def __init__(self, usergroups: dict[str, list[str]] | None = None) -> None:
        self.messages: dict[str, Posted] = {}
        self.ephemerals: list[Ephemeral] = []
        self.views: list[tuple[str, dict[str, Any]]] = []
        self.homes: list[tuple[str, dict[str, Any]]] = []
        self.uploads: list[dict[str, Any]] = []
        #: (channel, ts) of each pins.add, in order
        self.pins: list[tuple[str, str]] = []
        self.names: dict[str, str] = {}
        #: people's Slack locales (``users.info`` with include_locale); absent: unknown
        self.locales: dict[str, str] = {}
        self.usergroups = usergroups or {}
        self._ts = itertools.count(1)
        #: errors the next ``post`` calls raise, in order (as Slack's not_in_channel would)
        self.post_failures: list[Exception] = []

    async def post(
        self, channel: str, *, text: str, blocks: list[dict[str, object]], thread_ts: str | None
    ) -> str:
        await asyncio.sleep(0)
        if self.post_failures:
            raise self.post_failures.pop(0)
        ts = f"1700000000.{next(self._ts):06d}"
        self.messages[ts] = Posted(channel, ts, text, list(blocks), thread_ts)
        return ts

    async def update(
        self, channel: str, ts: str, *, text: str, blocks: list[dict[str, object]]
    ) -> None:
        await asyncio.sleep(0)
        msg = self.messages.get(ts)
        if msg is None or msg.channel != channel:
            raise SlackError(f"message_not_found: {channel}/{ts}")
        msg.edits.append((msg.text, msg.blocks))
        msg.text, msg.blocks = text, list(blocks)

    async def post_ephemeral(
        self,
        channel: str,
        user: str,
        *,
        text: str,
        blocks: list[dict[str, object]],
        thread_ts: str | None = None,
    ) -> None:
        self.ephemerals.append(Ephemeral(channel, user, text, list(blocks), thread_ts))

    async def pin(self, channel: str, ts: str) -> None:
        msg = self.messages.get(ts)
        if msg is None or msg.channel != channel:
            raise SlackError(f"message_not_found: {channel}/{ts}")
        self.pins.append((channel, ts))

    async def upload(
        self,
        channel: str,
        thread_ts: str | None,
        *,
        filename: str,
        title: str,
        content: str | bytes,
        alt_txt: str | None = None,
    ) -> None:
        self.uploads.append(
            {
                "channel": channel,
                "thread_ts": thread_ts,
                "filename": filename,
                "title": title,
                "content": content,
                "alt_txt": alt_txt,
            }
        )

    async def upload_files(
        self,
        channel: str,
        thread_ts: str | None,
        *,
        files: list[tuple[str, str, str]],
        comment: str,
    ) -> None:
        for name, title, content in files:
            self.uploads.append(
                {
                    "channel": channel,
                    "thread_ts": thread_ts,
                    "filename": name,
                    "title": title,
                    "content": content,
                    "alt_txt": None,
                    "comment": comment,
                }
            )

    async def open_view(self, trigger_id: str, view: dict[str, object]) -> str:
        self.views.append((trigger_id, dict(view)))
        return f"V{len(self.views):04d}"

    async def publish_home(self, user: str, view: dict[str, object]) -> None:
        self.homes.append((user, dict(view)))

    async def usergroup_members(self, usergroup_id: str) -> list[str]:
        return list(self.usergroups.get(usergroup_id, []))

    async def user_name(self, user_id: str) -> str:
        return self.names.get(user_id, user_id)

    async def user_locale(self, user_id: str) -> str | None:
        return self.locales.get(user_id)

    # -- test helpers ---------------------------------------------------------------------
    def roots(self) -> list[Posted]:
        return [m for m in self.messages.values() if m.thread_ts is None]

    def thread(self, ts: str) -> list[Posted]:
        return [m for m in self.messages.values() if m.thread_ts == ts]

    def ephemerals_for(self, user: str) -> list[str]:
        return [e.text for e in self.ephemerals if e.user == user]

    def buttons(self, ts: str) -> list[tuple[str, str]]:
        """(action_id, value) of every button on the message now."""
        out = []
        for block in self.messages[ts].blocks:
            for el in block.get("elements", []) if block.get("type") == "actions" else []:
                out.append((str(el["action_id"]), str(el.get("value", ""))))
        return out
