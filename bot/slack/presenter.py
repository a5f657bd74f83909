"""``SlackPresenter``: the ``ThreadPort`` of Slack. The use cases hand it outcomes
(``bot.core.outcomes``: a ``Refused`` code, a ``Notice`` key, with raw parameters); it picks
the reader's language and words them through ``bot.render``, then posts over the ``ChatPort``.

The language is chosen here and only here (``LocaleChooser``, rules in ``bot.core.locales``):
what only one person sees is in their language (the channel's override first); a post in an
incident thread is in the language the thread keeps; a post outside a thread is in the
channel's language, else the default.
"""

from __future__ import annotations

from collections.abc import Sequence

from bot.core.incidents import Incident
from bot.core.locales import DEFAULT_LOCALE
from bot.core.outcomes import Diagnosed, RootLine, Told
from bot.core.state_change import StateChange
from bot.render.blocks import Message
from bot.render.notices import render_messages, render_told
from bot.render.state import state_change_message, superseded_message
from bot.services.locales import LocaleChooser
from bot.services.ports import ChatPort


class SlackPresenter:
    """One per process, over the chat and the locale rules the services share."""

    def __init__(self, chat: ChatPort, locales: LocaleChooser) -> None:
        self.chat = chat
        self.locales = locales

    async def message_for(self, channel: str, user: str, told: Told) -> Message:
        """``told`` as ``user`` reads it: for answers that are not posts (a slash
        command's acknowledgement)."""
        if isinstance(told, Diagnosed):
            raise TypeError("a diagnosis is posted in its thread, not told to one person")
        return render_told(told, await self.locales.for_person(channel, user))

    def _thread_locale(self, channel: str, incident: Incident | None) -> str:
        if incident is not None:
            return self.locales.for_thread(incident)
        return self.locales.channel(channel) or DEFAULT_LOCALE

    async def tell(
        self, channel: str, user: str, told: Told, *, thread_ts: str | None = None
    ) -> None:
        text, blocks = await self.message_for(channel, user, told)
        await self.chat.post_ephemeral(channel, user, text=text, blocks=blocks, thread_ts=thread_ts)

    async def post(
        self,
        channel: str,
        told: Told,
        *,
        incident: Incident | None = None,
        thread_ts: str | None = None,
    ) -> str:
        ts = thread_ts if thread_ts is not None else (incident.thread_ts if incident else None)
        if isinstance(told, RootLine):
            ts = None  # the root starts the thread
        first = ""
        for text, blocks in render_messages(told, self._thread_locale(channel, incident)):
            posted = await self.chat.post(channel, text=text, blocks=blocks, thread_ts=ts)
            first = first or posted
        return first

    async def update(
        self, channel: str, ts: str, told: Told, *, incident: Incident | None = None
    ) -> None:
        if isinstance(told, Diagnosed):
            raise TypeError("a diagnosis is posted as new messages, never edited into one")
        text, blocks = render_told(told, self._thread_locale(channel, incident))
        await self.chat.update(channel, ts, text=text, blocks=blocks)

    async def show_state(
        self,
        channel: str,
        told: Diagnosed,
        *,
        incident: Incident,
        thread_ts: str | None = None,
        replace: Sequence[str] = (),
        change: StateChange | None = None,
    ) -> list[str]:
        locale = self._thread_locale(channel, incident)
        ts = thread_ts if thread_ts is not None else incident.thread_ts
        shown: list[str] = []
        for i, (text, blocks) in enumerate(render_messages(told, locale)):
            if i < len(replace):
                await self.chat.update(channel, replace[i], text=text, blocks=blocks)
                shown.append(replace[i])
            else:
                shown.append(await self.chat.post(channel, text=text, blocks=blocks, thread_ts=ts))
        for left in replace[len(shown) :]:  # the state needs fewer messages than before
            text, blocks = superseded_message(locale)
            await self.chat.update(channel, left, text=text, blocks=blocks)
            shown.append(left)
        if change is not None:
            text, blocks = state_change_message(change, locale)
            await self.chat.post(channel, text=text, blocks=blocks, thread_ts=ts)
        return shown
