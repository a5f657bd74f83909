"""The Slack presenter as the use-case tests use it: it words and posts every outcome as in
production, and keeps the outcomes, so a test asserts what the use case said (a code and its
parameters), not the English it is worded in."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeVar

from bot.core.model.incidents import Incident
from bot.core.reporting.outcomes import ActionForm, Diagnosed, Notice, Refused, Told
from bot.core.reporting.state_change import StateChange
from bot.services.locales import LocaleChooser
from bot.services.ports import ChatPort
from bot.slack.presenter import SlackPresenter

T = TypeVar("T")


class RecordingPresenter(SlackPresenter):
    def __init__(self, chat: ChatPort, locales: LocaleChooser | None = None) -> None:
        super().__init__(chat, locales or LocaleChooser(chat))  # type: ignore[arg-type]
        #: (channel, the person told or None for a post, the outcome), in order
        self.said: list[tuple[str, str | None, Told]] = []
        #: how often a diagnosis was written over the current state (not posted anew)
        self.edited_states = 0

    async def tell(
        self, channel: str, user: str, told: Told, *, thread_ts: str | None = None
    ) -> None:
        self.said.append((channel, user, told))
        await super().tell(channel, user, told, thread_ts=thread_ts)

    async def post(
        self,
        channel: str,
        told: Told,
        *,
        incident: Incident | None = None,
        thread_ts: str | None = None,
    ) -> str:
        self.said.append((channel, None, told))
        return await super().post(channel, told, incident=incident, thread_ts=thread_ts)

    async def update(
        self, channel: str, ts: str, told: Told, *, incident: Incident | None = None
    ) -> None:
        self.said.append((channel, None, told))
        await super().update(channel, ts, told, incident=incident)

    async def show(self, trigger_id: str, channel: str, user: str, form: ActionForm) -> None:
        self.said.append((channel, user, form))
        await super().show(trigger_id, channel, user, form)

    def outcomes(self, kind: type[T]) -> list[T]:
        """The outcomes of ``kind`` told, posted, edited or shown, in order."""
        return [t for _, _, t in self.said if isinstance(t, kind)]

    def refusals(self, user: str | None = None) -> list[Refused]:
        """The refusals told (to ``user``), in order."""
        return [t for _, who, t in self.said if isinstance(t, Refused) and user in (None, who)]

    def notices(self, key: str | None = None) -> list[Notice]:
        return [t for _, _, t in self.said if isinstance(t, Notice) and key in (None, t.key)]

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
        if not replace:  # a state written over the old one is an edit, not a new post
            self.said.append((channel, None, told))
        self.edited_states += 1 if replace else 0
        return await super().show_state(
            channel, told, incident=incident, thread_ts=thread_ts, replace=replace, change=change
        )
