"""``SlackPresenter``: the ``ThreadPort`` of Slack. The use cases hand it outcomes
(``bot.core.outcomes``: a ``Refused`` code, a ``Notice`` key, with raw parameters); it picks
the reader's language and words them through ``bot.render``, then posts over the ``ChatPort``.

The language is chosen here and only here (``LocaleChooser``, rules in ``bot.core.locales``):
what only one person sees is in their language (the channel's override first); a post in an
incident thread is in the language the thread keeps; a post outside a thread is in the
channel's language, else the default.
"""

from __future__ import annotations

from typing import get_args

from bot.core.incidents import Incident
from bot.core.locales import DEFAULT_LOCALE
from bot.core.outcomes import (
    ActionDiff,
    ActionForm,
    ActionResult,
    ActionTold,
    ApprovalClosed,
    ApprovalRequested,
    Diagnosed,
    DryRun,
    RootLine,
    Told,
)
from bot.render.acting import action_form, render_action
from bot.render.blocks import Message
from bot.render.notices import render_messages, render_told
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
        return _one(told, await self.locales.for_person(channel, user))

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
        locale = self._thread_locale(channel, incident)
        messages = [_one(told, locale)] if _is_action(told) else render_messages(told, locale)
        for text, blocks in messages:
            posted = await self.chat.post(channel, text=text, blocks=blocks, thread_ts=ts)
            first = first or posted
        return first

    async def update(
        self, channel: str, ts: str, told: Told, *, incident: Incident | None = None
    ) -> None:
        if isinstance(told, Diagnosed):
            raise TypeError("a diagnosis is posted as new messages, never edited into one")
        text, blocks = _one(told, self._thread_locale(channel, incident))
        await self.chat.update(channel, ts, text=text, blocks=blocks)

    async def show(self, trigger_id: str, channel: str, user: str, form: ActionForm) -> None:
        """Open ``form`` as a modal for ``user`` (within Slack's 3 s of their click)."""
        view = action_form(form, await self.locales.for_person(channel, user))
        await self.chat.open_view(trigger_id, view)


def _is_action(told: Told) -> bool:
    return isinstance(told, get_args(ActionTold))


def _one(told: Told, locale: str) -> Message:
    """One message of ``told`` (never a diagnosis, which is several) in ``locale``."""
    if isinstance(told, Diagnosed):
        raise TypeError("a diagnosis is several messages; post it")
    if isinstance(told, ActionForm):
        raise TypeError("a form is opened as a view (show), never posted")
    if isinstance(told, DryRun | ApprovalRequested | ApprovalClosed | ActionResult | ActionDiff):
        return render_action(told, locale)
    return render_told(told, locale)
