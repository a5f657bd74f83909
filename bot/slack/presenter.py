"""``SlackPresenter``: the ``ThreadPort`` of Slack. The use cases hand it outcomes
(``bot.core.reporting.outcomes``: a ``Refused`` code, a ``Notice`` key, with raw parameters); it
picks the reader's language and words them through ``bot.render``, then posts over the ``ChatPort``.

The language is chosen here and only here (``LocaleChooser``, rules in ``bot.core.model.locales``):
what only one person sees is in their language (the channel's override first); a post in an
incident thread is in the language the thread keeps; a post outside a thread is in the
channel's language, else the default.

It is also the ``FilesPort``: the use cases hand it chart specs (``bot.core.reporting.charts``) and
postmortem drafts (``bot.core.reporting.postmortem``), and it draws (``bot.charts``, in a worker
thread) and renders (``bot.render.postmortem``) them in the thread's language, then shares
the files (charts in the bot's worker process, ``bot.offloading``, where it has one: drawing
holds the interpreter lock). A chart that cannot be drawn or shared is logged, never the use
case's failure.

Rendering (Block Kit, Markdown, HTML, the prevention kit's files, charts) runs on a worker
thread (``asyncio.to_thread``), never on the event loop: a diagnosis's messages take tens of
ms to render, seconds on a loaded machine, and the loop must keep acknowledging commands.
Each call awaits its rendering before it posts, so the messages keep their order, and what
the rendering raises reaches the caller as it would have on the loop.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from typing import get_args

from bot.core.model.incidents import Incident
from bot.core.model.locales import DEFAULT_LOCALE
from bot.core.remedies.prevention import KitSource, PreventionParams
from bot.core.reporting.charts import ChartSpec
from bot.core.reporting.home import HomeSummary
from bot.core.reporting.outcomes import (
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
from bot.core.reporting.postmortem import Postmortem
from bot.core.reporting.state_change import StateChange
from bot.errors import GpunodeError
from bot.offloading import Offloader
from bot.render import environment
from bot.render.acting import action_form, render_action
from bot.render.blocks import Message
from bot.render.catalogs import translator
from bot.render.chart_titles import title as titled
from bot.render.home import render_home
from bot.render.notices import render_messages, render_told
from bot.render.postmortem import render_postmortem_html, render_postmortem_markdown
from bot.render.prevention import kit_message, render_prevention_files
from bot.render.state import state_change_message, superseded_message
from bot.services.locales import LocaleChooser
from bot.services.ports import ChatPort
from bot.working import Named

log = logging.getLogger(__name__)


#: ``bot.charts.rendering.render_pngs``: each spec as a PNG with its words in a locale,
#: imported where it runs (matplotlib loads on the first chart, in the worker where there is
#: one: ~80 ms of CPU a chart, 0.5 s for the first, none of it on the bot's interpreter)
DRAW_CHARTS = Named("bot.charts.rendering:render_pngs")


def chart_title(spec: ChartSpec, locale: str) -> str:
    """The chart's title as drawn in ``locale`` (the file's title and alt text)."""
    return titled(spec, translator(locale))


class SlackPresenter:
    """One per process, over the chat and the locale rules the services share."""

    def __init__(
        self, chat: ChatPort, locales: LocaleChooser, *, offload: Offloader | None = None
    ) -> None:
        self.chat = chat
        self.locales = locales
        #: where charts are drawn (``gpunode serve``: the worker process it analyses in)
        self.offload = offload or Offloader()

    async def message_for(self, channel: str, user: str, told: Told) -> Message:
        """``told`` as ``user`` reads it: for answers that are not posts (a slash
        command's acknowledgement)."""
        if isinstance(told, Diagnosed):
            raise TypeError("a diagnosis is posted in its thread, not told to one person")
        return await asyncio.to_thread(_one, told, await self.locales.for_person(channel, user))

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
        messages = await asyncio.to_thread(_messages, told, locale)
        for text, blocks in messages:
            posted = await self.chat.post(channel, text=text, blocks=blocks, thread_ts=ts)
            first = first or posted
        return first

    async def update(
        self, channel: str, ts: str, told: Told, *, incident: Incident | None = None
    ) -> None:
        if isinstance(told, Diagnosed):
            raise TypeError("a diagnosis is posted as new messages, never edited into one")
        text, blocks = await asyncio.to_thread(_one, told, self._thread_locale(channel, incident))
        await self.chat.update(channel, ts, text=text, blocks=blocks)

    async def show(self, trigger_id: str, channel: str, user: str, form: ActionForm) -> None:
        """Open ``form`` as a modal for ``user`` (within Slack's 3 s of their click)."""
        view = await asyncio.to_thread(
            action_form, form, await self.locales.for_person(channel, user)
        )
        await self.chat.open_view(trigger_id, view)

    async def show_home(self, user: str, home: HomeSummary) -> None:
        """Publish ``home`` as ``user``'s Home tab (``views.publish``), in their language."""
        view = render_home(home, await self.locales.for_person("", user))
        await self.chat.publish_home(user, view)

    async def chart(
        self, incident: Incident, spec: ChartSpec, *, name: str, thread_ts: str | None = None
    ) -> None:
        thread_ts = thread_ts or incident.thread_ts
        if not thread_ts:
            return
        locale = self.locales.for_thread(incident)
        try:
            png = (await self.offload.run(DRAW_CHARTS, {name: spec}, locale))[name]
        except Exception:  # a drawing bug must not cost the thread its verdict line
            log.exception("chart for %s could not be drawn", incident.id)
            return
        title = chart_title(spec, locale)
        try:
            await self.chat.upload(
                incident.channel,
                thread_ts,
                filename=f"{incident.id}-{name}.png",
                title=title,
                content=png,
                alt_txt=title,
            )
        except GpunodeError as err:
            log.warning("chart for %s not uploaded: %s", incident.id, err.code)

    async def postmortem(
        self, incident: Incident, draft: Postmortem, charts: dict[str, ChartSpec]
    ) -> list[str]:
        locale = self.locales.for_thread(incident)
        pngs: dict[str, bytes] = await self.offload.run(DRAW_CHARTS, charts, locale)
        chart_names = {key: f"{incident.id}-postmortem-{key}.png" for key in pngs}
        files: list[tuple[str, str, str | bytes]] = [
            (chart_names[key], f"{incident.id} · {chart_title(charts[key], locale)}", png)
            for key, png in pngs.items()
        ]
        markdown, html = await asyncio.to_thread(
            _postmortem_texts, draft, chart_names, pngs, locale
        )
        t = translator(locale)
        files += [
            (
                f"{incident.id}-postmortem.{ext}",
                t.gettext(
                    "%(incident)s postmortem draft (%(format)s)", incident=incident.id, format=fmt
                ),
                content,
            )
            for ext, fmt, content in (("md", "Markdown", markdown), ("html", "HTML", html))
        ]
        for name, title, content in files:
            await self.chat.upload(
                incident.channel,
                incident.thread_ts,
                filename=name,
                title=title,
                content=content,
                alt_txt=title if name.endswith(".png") else None,
            )
        return [name for name, *_ in files]

    async def kit(
        self,
        channel: str,
        user: str,
        params: PreventionParams,
        source: KitSource,
        *,
        incident: Incident | None = None,
    ) -> list[str]:
        if incident is not None:
            locale = self.locales.for_thread(incident)
        else:
            locale = await self.locales.for_opening(channel, user)
        thread_ts = incident.thread_ts if incident is not None else None
        files, (text, blocks) = await asyncio.to_thread(_kit_texts, params, source, locale)
        await self.chat.post(channel, text=text, blocks=blocks, thread_ts=thread_ts)
        t = environment.macros("slack", "prevention.j2", locale=locale)
        words = translator(locale)
        node = params.node
        titled = [
            (
                f"{node}-{name}",
                words.gettext("%(node)s prevention kit: %(file)s", node=node, file=name),
                files[name],
            )
            for name in files
        ]
        await self.chat.upload_files(
            channel,
            thread_ts,
            files=titled,
            comment=str(t.upload_comment(node, len(files))).strip(),
        )
        return [f"{node}-{name}" for name in files]

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
        messages = await asyncio.to_thread(render_messages, told, locale)
        for i, (text, blocks) in enumerate(messages):
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


def _messages(told: Told, locale: str) -> list[Message]:
    return [_one(told, locale)] if _is_action(told) else render_messages(told, locale)


def _postmortem_texts(
    draft: Postmortem, names: dict[str, str], pngs: dict[str, bytes], locale: str
) -> tuple[str, str]:
    return (
        render_postmortem_markdown(draft, charts=names, locale=locale),
        render_postmortem_html(draft, charts=pngs, locale=locale),
    )


def _kit_texts(
    params: PreventionParams, source: KitSource, locale: str
) -> tuple[dict[str, str], Message]:
    return (
        render_prevention_files(params, locale=locale, source=source),
        kit_message(params, source, locale=locale),
    )


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
