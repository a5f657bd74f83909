"""``LocaleChooser``: the language of each message gpunode sends, from the settings' channel
overrides, the incident thread's kept locale and the person's Slack locale.

The rules are ``bot.core.model.locales`` (pure); this module only gathers their inputs. A person's
Slack locale comes from ``ChatPort.user_locale`` (``users.info`` with ``include_locale``,
cached by the chat edge); when it cannot be read the message is in the default language.

- ``for_person``: an ephemeral reply or a modal -- the channel's override, else the person's;
- ``for_person_promptly``: the same for a slash command's ack, or None when Slack has not said
  the person's locale within ``ACK_LOOKUP_S`` (the ack then carries no words, and the answer
  follows in the person's language: an ack never waits on Slack near its 3 s);
- ``for_opening``: the locale a new incident thread keeps -- the channel's, else the opener's;
- ``for_thread``: a post in an incident thread -- the channel's override, else the thread's.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from typing import Protocol

from bot.core.model.locales import Locale, choose_locale, opening_locale

log = logging.getLogger(__name__)

#: actors that are not people: they have no Slack locale to look up
MACHINE_ACTORS = frozenset({"", "gpunode", "alertmanager"})
#: a reply in the person's language waits at most this for ``users.info`` (rate-limit
#: retries): then it is written in the default language (modals must open within 3 s too)
LOOKUP_TIMEOUT_S = 1.0
#: how long a slash command's ack waits for the person's Slack locale before it is sent
#: without words (``for_person_promptly``); a cached locale is known at once. Slack gives
#: the ack 3 s from the request, so whatever else the ack does has two seconds left
ACK_LOOKUP_S = LOOKUP_TIMEOUT_S
#: after the ack nothing waits on the answer but the person: a lookup is given this long
#: (slack_sdk's own timeout and rate-limit retries bound it too) before the default language
LATE_LOOKUP_S = 20.0


class _UserLocales(Protocol):
    async def user_locale(self, user_id: str) -> str | None: ...


class _Threaded(Protocol):
    @property
    def channel(self) -> str: ...

    @property
    def locale(self) -> str: ...


class LocaleChooser:
    """One per process. ``chat=None``: nobody's Slack locale is known (the CLI, tests)."""

    def __init__(
        self,
        chat: _UserLocales | None = None,
        *,
        channel_locales: Mapping[str, str] | None = None,
        timeout_s: float = LOOKUP_TIMEOUT_S,
    ) -> None:
        self._chat = chat
        self._channels = dict(channel_locales or {})
        self._timeout_s = timeout_s

    def channel(self, channel: str) -> str | None:
        """The channel's override from the settings, if any."""
        return self._channels.get(channel)

    async def user(self, user: str, *, timeout_s: float | None = None) -> str | None:
        """The person's Slack locale, or None (a machine actor, or unreadable within
        ``timeout_s``, by default the chooser's)."""
        if self._chat is None or user in MACHINE_ACTORS:
            return None
        try:
            async with asyncio.timeout(self._timeout_s if timeout_s is None else timeout_s):
                return await self._chat.user_locale(user)
        except TimeoutError:
            log.warning("the Slack locale of %s took too long; default language", user)
            return None

    async def for_person(
        self, channel: str, user: str, *, timeout_s: float | None = None
    ) -> Locale:
        override = self.channel(channel)
        if override is not None:  # no users.info call when the channel decides anyway
            return choose_locale(channel=override)
        return choose_locale(user=await self.user(user, timeout_s=timeout_s), audience="person")

    async def for_person_promptly(
        self, channel: str, user: str, *, within_s: float = ACK_LOOKUP_S
    ) -> Locale | None:
        """``for_person``, or None when the person's Slack locale is not known within
        ``within_s`` (the lookup goes on, and its answer is kept for the next message)."""
        override = self.channel(channel)
        if override is not None:
            return choose_locale(channel=override)
        if self._chat is None or user in MACHINE_ACTORS:
            return choose_locale(audience="person")
        try:
            async with asyncio.timeout(within_s):
                found = await self._chat.user_locale(user)
        except TimeoutError:
            return None
        return choose_locale(user=found, audience="person")

    async def for_opening(self, channel: str, user: str) -> Locale:
        override = self.channel(channel)
        if override is not None:
            return opening_locale(channel=override)
        return opening_locale(user=await self.user(user))

    def for_thread(self, incident: _Threaded) -> Locale:
        return choose_locale(channel=self.channel(incident.channel), thread=incident.locale)
