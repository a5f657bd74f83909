"""Workspace model of the Slack stand-in: users, groups, channels, messages, threads.

Mutable in-memory state, owned by one event loop. Messages are keyed by ``(channel, ts)``
with ``ts`` of the form ``"<epoch>.<6 digits>"``, unique and increasing per workspace (the
clock is injectable). Thread bookkeeping follows Slack: a parent carries ``thread_ts``,
``reply_count``, ``reply_users``, ``reply_users_count`` and ``latest_reply``; a reply carries
``thread_ts`` and ``parent_user_id``. Ephemeral messages live in a per-user store and are never
in channel history (Slack does not store them).
"""

from __future__ import annotations

import asyncio
import copy
import itertools
import secrets
import string
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

JSON = dict[str, Any]

TEAM_ID = "T0GPUNODE"
TEAM_DOMAIN = "gpunode-sim"
BOT_USER_ID = "U0GPUNODE"
BOT_ID = "B0GPUNODE"
APP_ID = "A0GPUNODE"
_ALNUM = string.ascii_uppercase + string.digits


@dataclass
class User:
    id: str
    name: str
    real_name: str = ""
    title: str = ""
    is_bot: bool = False
    #: the person's Slack language (``en-US``, ``zh-CN``, ``zh-TW``, ``ja-JP``...)
    locale: str = "en-US"

    def to_api(self, *, include_locale: bool = False) -> JSON:
        """``users.info`` shape (the fields bots commonly read). Slack adds ``locale`` only
        when the caller asks with ``include_locale``."""
        real = self.real_name or self.name
        locale = {"locale": self.locale} if include_locale else {}
        return {
            "id": self.id,
            "team_id": TEAM_ID,
            "name": self.name,
            "real_name": real,
            "deleted": False,
            "is_bot": self.is_bot,
            "tz": "UTC",
            "tz_offset": 0,
            "profile": {
                "display_name": self.name,
                "real_name": real,
                "title": self.title,
                "email": f"{self.name}@{TEAM_DOMAIN}.example",
            },
            **locale,
        }


@dataclass
class UserGroup:
    id: str
    handle: str
    members: list[str]


@dataclass
class Channel:
    id: str
    name: str
    #: whether the bot was invited; chat.postMessage elsewhere is Slack's ``not_in_channel``
    bot_member: bool = True


@dataclass
class Ephemeral:
    user: str
    channel: str
    ts: str
    message: JSON


@dataclass
class OpenView:
    """One view of a user's modal stack. ``errors`` holds the last response_action errors."""

    id: str
    user: str
    view: JSON
    errors: dict[str, str] = field(default_factory=dict)


@dataclass
class Trigger:
    id: str
    user: str
    issued_at: float
    used: bool = False


@dataclass
class ResponseUrl:
    """Context of one response_url: where a respond() lands (5 uses within 30 minutes)."""

    token: str
    created_at: float
    user: str
    channel: str
    source_ts: str | None = None
    source_ephemeral: bool = False
    uses: int = 0


@dataclass
class Pin:
    """A message pinned to a channel (``pins.add``): who pinned it and when."""

    ts: str
    created: int
    created_by: str


@dataclass
class SharedFile:
    id: str
    filename: str
    length: int
    user: str
    title: str = ""
    content: bytes | None = None
    channels: list[str] = field(default_factory=list)
    thread_ts: str | None = None
    alt_txt: str = ""


class Workspace:
    """All state of one simulated workspace. Every mutation calls :meth:`changed`."""

    def __init__(self, *, clock: Callable[[], float]) -> None:
        self.clock = clock
        self.base_url = ""
        self.users: dict[str, User] = {}
        self.usergroups: dict[str, UserGroup] = {}
        self.channels: dict[str, Channel] = {}
        self.messages: dict[str, dict[str, JSON]] = {}
        self.ephemerals: dict[str, list[Ephemeral]] = {}
        self.views: dict[str, OpenView] = {}
        self.stacks: dict[str, list[str]] = {}
        self.files: dict[str, SharedFile] = {}
        self.triggers: dict[str, Trigger] = {}
        self.response_urls: dict[str, ResponseUrl] = {}
        #: pinned messages per channel, oldest first (``pins.*``)
        self.pins: dict[str, list[Pin]] = {}
        #: each user's published Home tab (``views.publish``), and whether the app has one
        self.homes: dict[str, JSON] = {}
        self.home_tab_enabled = True
        self.version = 0
        self.closed = False  # set on shutdown so live-update streams end promptly
        self._event = asyncio.Event()
        self._last_us = 0
        self._counter = itertools.count(1)
        self.add_user(User(BOT_USER_ID, "gpunode", "gpunode", "bot", is_bot=True))

    # -- ids and time -------------------------------------------------------------------
    def next_ts(self) -> str:
        """A fresh message ts, strictly greater than every earlier one."""
        now_us = int(self.clock() * 1_000_000)
        self._last_us = max(now_us, self._last_us + 1)
        return f"{self._last_us // 1_000_000}.{self._last_us % 1_000_000:06d}"

    def new_id(self, prefix: str) -> str:
        """Slack-looking ids: prefix + counter + random tail (``V0001A3F9``)."""
        tail = "".join(secrets.choice(_ALNUM) for _ in range(4))
        return f"{prefix}{next(self._counter):04d}{tail}"

    # -- change notification (console live updates) ----------------------------------------
    def changed(self) -> None:
        self.version += 1
        event, self._event = self._event, asyncio.Event()
        event.set()

    async def wait_changed(self, timeout_s: float) -> bool:
        event = self._event
        try:
            await asyncio.wait_for(event.wait(), timeout_s)
        except TimeoutError:
            return False
        return True

    # -- directory ------------------------------------------------------------------------
    def add_user(self, user: User) -> None:
        self.users[user.id] = user
        self.changed()

    def add_channel(self, channel: Channel) -> None:
        self.channels[channel.id] = channel
        self.messages.setdefault(channel.id, {})
        self.changed()

    # -- messages -------------------------------------------------------------------------
    def store(self, channel: str, message: JSON, *, thread_ts: str | None = None) -> JSON:
        """Store ``message`` (without ts) in ``channel``; maintain thread fields. Returns it."""
        history = self.messages[channel]
        ts = self.next_ts()
        msg = {**message, "ts": ts}
        if thread_ts is not None:
            parent = history[thread_ts]
            root_ts = parent.get("thread_ts") or thread_ts
            parent = history[root_ts]
            msg["thread_ts"] = root_ts
            msg["parent_user_id"] = parent.get("user", "")
            parent["thread_ts"] = root_ts
            parent["reply_count"] = parent.get("reply_count", 0) + 1
            users = parent.setdefault("reply_users", [])
            if msg.get("user") and msg["user"] not in users:
                users.append(msg["user"])
            parent["reply_users_count"] = len(users)
            parent["latest_reply"] = ts
        history[ts] = msg
        self.changed()
        return msg

    def top_level(self, channel: str) -> list[JSON]:
        """Channel history as the channel shows it: parents, plain posts, broadcasts."""
        return [
            copy.deepcopy(m)
            for m in self.messages.get(channel, {}).values()
            if m.get("thread_ts") in (None, m["ts"]) or m.get("subtype") == "thread_broadcast"
        ]

    def thread(self, channel: str, thread_ts: str) -> list[JSON]:
        """Parent first, then replies ascending (conversations.replies order)."""
        history = self.messages.get(channel, {})
        parent = history.get(thread_ts)
        if parent is None:
            return []
        replies = [
            m for m in history.values() if m.get("thread_ts") == thread_ts and m["ts"] != thread_ts
        ]
        return copy.deepcopy([parent, *replies])

    def delete(self, channel: str, ts: str) -> None:
        history = self.messages[channel]
        msg = history.pop(ts)
        root = msg.get("thread_ts")
        if root and root != ts and root in history:
            parent = history[root]
            parent["reply_count"] = max(0, parent.get("reply_count", 1) - 1)
        self.changed()

    def add_ephemeral(self, user: str, channel: str, message: JSON) -> Ephemeral:
        eph = Ephemeral(user, channel, self.next_ts(), message)
        eph.message = {**message, "ts": eph.ts}
        self.ephemerals.setdefault(user, []).append(eph)
        self.changed()
        return eph

    def find_ephemeral(self, user: str, ts: str) -> Ephemeral | None:
        return next((e for e in self.ephemerals.get(user, []) if e.ts == ts), None)

    # -- triggers and response urls -------------------------------------------------------
    def issue_trigger(self, user: str) -> str:
        digits = f"{int(self.clock() * 1000)}.{next(self._counter)}"
        trigger = Trigger(f"{digits}.{secrets.token_hex(16)}", user, self.clock())
        self.triggers[trigger.id] = trigger
        return trigger.id

    def issue_response_url(
        self, user: str, channel: str, *, source_ts: str | None = None, ephemeral: bool = False
    ) -> str:
        token = secrets.token_urlsafe(18)
        self.response_urls[token] = ResponseUrl(
            token, self.clock(), user, channel, source_ts, ephemeral
        )
        return f"{self.base_url}/hooks/{TEAM_ID}/{token}"
