"""The slash command and the thread events. A command, typed or a mention in an incident
thread, is parsed with the one grammar (``bot.core.governance.commands``), carried out by the
command table (``bot.services.commands.handle``, which checks the verb's permission), and its typed
outcome presented here (``as_told``); ``threads`` keeps replies in the timeline. The
buttons and modals are ``bot.slack.interactions``; both are registered on the Bolt app by
``bot.slack.bolt``, and neither imports the other.

Every listener acknowledges first and hands slow work to ``Background``: Slack gives three
seconds. Parsing is pure and fast, so a usage error is answered in the ack itself. The ack
never waits on Slack for long: when the person's language is not known within
``ACK_LOOKUP_S`` (a cold cache and a slow ``users.info``), the ack carries no words and the
answer is told (ephemeral) in that language once Slack has said it.
"""

from __future__ import annotations

import asyncio
import logging
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from slack_bolt.async_app import AsyncApp

from bot.core.governance import commands
from bot.core.model.incidents import Incident
from bot.core.reporting.outcomes import (
    HelpAsked,
    Notice,
    Outcome,
    Posted,
    Refused,
    Resolved,
    StatusList,
    TopNodes,
)
from bot.errors import GpunodeError, UsageError
from bot.render.blocks import Message
from bot.render.help import help_text
from bot.render.notices import render_told
from bot.services import threads
from bot.services.chat_surface import ChatSurface
from bot.services.chatops import BotServices
from bot.services.clusters import incident_at
from bot.services.commands import Asker, entry, handle
from bot.services.locales import ACK_LOOKUP_S, LATE_LOOKUP_S
from bot.slack.payloads import slack_unescape

log = logging.getLogger(__name__)


def register(app: AsyncApp, s: BotServices) -> None:
    """The ``/gpunode`` command and the thread events (message, app_mention) on ``app``."""
    _register_commands(app, s)
    _register_events(app, s)


@dataclass(frozen=True)
class _Reply:
    """What a slash command is answered with: ``told`` to the asker (in the ack, or posted
    after it; None: ``work`` tells the answer when it has one), the metric's word for it
    (``result``; None: ``work`` counts itself) and the work left to do after the answer
    (``work``: None for a refusal or a local read answered in time)."""

    told: Refused | Notice | None
    verb: str
    result: str | None = None
    work: Callable[[], Awaitable[str]] | None = None


#: how long a slash command's ack waits for a quick command's answer (a local read, but its
#: permission check may ask Slack who is in the policy's user groups when their cache is
#: cold): then the ack goes without words and the answer follows, as for the person's
#: language (``ACK_LOOKUP_S``; together they leave Slack's 3 s a second for the rest)
QUICK_ACK_S = ACK_LOOKUP_S

#: the slash command gpunode answers (deploy/slack-app-manifest.yaml)
COMMAND = "/gpunode"
#: a slash command's listener: Bolt's ``ack`` and the command's form, as Bolt passes them
CommandListener = Callable[[Any, dict[str, Any]], Awaitable[None]]


def _register_commands(app: AsyncApp, s: BotServices) -> None:
    app.command(COMMAND)(command_listener(s))


def command_listener(s: BotServices) -> CommandListener:
    """``/gpunode``'s listener: registered on the Bolt app (Socket Mode dispatches through
    it), and called straight by the HTTP edge (``bot.slack.edge``), which skips Bolt's
    dispatch for it."""

    async def on_command(ack: Any, body: dict[str, Any]) -> None:
        # Slack escapes & < > in the text it sends; the templates escape on the way out
        text = slack_unescape(str(body.get("text", ""))).strip()
        channel, user = str(body.get("channel_id", "")), str(body.get("user_id", ""))
        # every answer here is ephemeral: in the asking person's language (bot.core.model.locales)
        locale = await s.diagnose.locales.for_person_promptly(channel, user)
        if locale is None:
            # Slack has not said the person's language in time: the ack carries no words
            # (never a wait near Slack's 3 s), and the answer follows in that language
            await ack()
            s.bg.spawn(_reply_later(s, text, channel, user), name="cmd-reply")
            return
        reply = await _reply(s, text, channel, user, locale)
        if reply.told is None:  # its answer is not ready in time: it follows the ack
            await ack()
        else:
            t, blocks = rendered(reply.told, locale)
            await ack(text=t, blocks=blocks, response_type="ephemeral")
        _go_on(s, reply)

    rendered = AckWords()
    return on_command


#: the notices an ack repeats, whose parameters are plain data (strings, numbers, lists, dicts)
REPEATED = frozenset({"status_list", "help", "command_started"})


class AckWords:
    """``render_told`` for acks, remembering the newest ``size`` answers of ``REPEATED``
    notices: most acks repeat one (``status`` while the open incidents stay the same,
    ``help``), and rendering the notice's template was the largest piece of gpunode's own
    work in an ack. The key is the notice's key, the locale and ``repr`` of its parameters,
    so a change in any of them renders anew. Callers must not change the message they get
    (the ack only serialises it)."""

    def __init__(self, size: int = 64) -> None:
        self._size = size
        self._kept: OrderedDict[tuple[str, str, str], Message] = OrderedDict()

    def __call__(self, told: Refused | Notice, locale: str) -> Message:
        if not isinstance(told, Notice) or told.key not in REPEATED:
            return render_told(told, locale)
        key = (told.key, locale, repr(told.params))
        kept = self._kept.get(key)
        if kept is not None:
            self._kept.move_to_end(key)
            return kept
        message = self._kept[key] = render_told(told, locale)
        if len(self._kept) > self._size:
            self._kept.popitem(last=False)
        return message


def _usage_notice(err: UsageError) -> Notice:
    """A command that does not parse, as the person is told: the usage error's words (its key
    and parameters for a presenter) and the usage it breaks."""
    return Notice(
        key="usage_error",
        params={
            "message": err.message,
            "usage": err.usage,
            "error_key": err.key,
            "error_params": err.params,
        },
    )


async def _reply(s: BotServices, text: str, channel: str, user: str, locale: str) -> _Reply:
    """The answer to ``/gpunode text``: a usage error, a refusal of the channel, a quick
    command's outcome (a local read, carried out here), or the note that the command started
    with its work (``work``) to do after the answer."""
    try:
        cmd = commands.parse(text, clusters=s.clusters.names)
    except UsageError as err:
        told = _usage_notice(err)
        return _Reply(told, _verb_of(text), "usage_error")
    if s.channels and channel not in s.channels:
        told = Notice(key="channel_not_served", params={"channel": channel})
        return _Reply(told, cmd.verb, "channel_not_served")
    asker = Asker(user=user, channel=channel)
    if entry(cmd.verb).quick:
        # a local read: answered in the ack itself (one round trip, nothing left running
        # after the ack), unless its permission check waits on Slack past QUICK_ACK_S: then
        # the answer, from the membership Slack gives, follows the ack (never an older one)
        quick = asyncio.ensure_future(_quick(s, cmd, asker, locale))
        try:
            await asyncio.wait({quick}, timeout=QUICK_ACK_S)
        except BaseException:
            quick.cancel()
            raise
        if quick.done():
            return _Reply(*quick.result())
        return _Reply(None, cmd.verb, work=lambda: _tell_when_done(s, quick, channel, user))
    started = Notice(key="command_started", params={"command": commands.canonical(cmd)})
    return _Reply(started, cmd.verb, work=lambda: answer(s, cmd, asker))


async def _quick(
    s: BotServices, cmd: commands.Command, asker: Asker, locale: str
) -> tuple[Refused | Notice, str, str]:
    """A quick command's (told, verb, result)."""
    try:
        outcome = await handle(cmd, asker, ChatSurface(s))
        told_now = as_told(outcome, locale)
        result = _result(outcome)
    except GpunodeError as err:
        told_now, result = _failed(err), "failed"
    assert told_now is not None, f"{cmd.verb} is quick, so it answers with words"
    return told_now, cmd.verb, result


async def _tell_when_done(
    s: BotServices,
    quick: asyncio.Future[tuple[Refused | Notice, str, str]],
    channel: str,
    user: str,
) -> str:
    """A quick command's answer that was not ready for the ack, told (ephemeral) when it is."""
    try:
        told, _, result = await quick
    finally:
        quick.cancel()  # when this is cancelled (shutdown); nothing once it is done
    try:
        await s.thread.tell(channel, user, told)
    except GpunodeError as err:
        log.warning("could not answer %s's command after its ack: %s", user, err.code)
    return result


def _go_on(s: BotServices, reply: _Reply) -> None:
    """After the answer: the command's work in the background, or its count."""
    if reply.work is not None:
        s.bg.spawn(_counted(s, reply.verb, reply.work()), name=f"cmd-{reply.verb}")
    elif reply.result is not None:
        s.metrics.command(reply.verb, reply.result)


async def _reply_later(s: BotServices, text: str, channel: str, user: str) -> None:
    """The answer to a command acked without words: told (ephemeral) once the person's
    language is known, or the default one after ``LATE_LOOKUP_S``."""
    locale = await s.diagnose.locales.for_person(channel, user, timeout_s=LATE_LOOKUP_S)
    reply = await _reply(s, text, channel, user, locale)
    if reply.told is not None:  # else its work tells it
        try:
            await s.thread.tell(channel, user, reply.told)
        except GpunodeError as err:
            log.warning("could not answer %s's command after its ack: %s", user, err.code)
    _go_on(s, reply)


def _verb_of(text: str) -> str:
    """The verb of a command that did not parse, if it is one (else ``unknown``): a metric
    label must not carry whatever someone typed."""
    words = text.lower().split()
    return words[0] if words and words[0] in commands.VERBS else "unknown"


async def _counted(s: BotServices, verb: str, work: Awaitable[str]) -> None:
    """Run a command's work; count it by verb and outcome (``error``: it raised)."""
    outcome = "error"
    try:
        outcome = await work
    finally:
        s.metrics.command(verb, outcome)


def _result(outcome: Outcome) -> str:
    """The metric's word for an outcome: ``denied``, ``failed`` or ``ok``."""
    if isinstance(outcome, Refused):
        return "denied"
    if isinstance(outcome, Posted) and not outcome.ok:
        return "failed"
    return "ok"


def _failed(err: GpunodeError) -> Notice:
    return Notice(
        key="command_failed",
        params={
            "message": err.message,
            "code": err.code,
            "error_key": err.key,
            "error_params": err.params,
        },
    )


def as_told(outcome: Outcome, locale: str) -> Refused | Notice | None:
    """A command's outcome as Slack shows it (None: the use case posted it already)."""
    if isinstance(outcome, Refused):
        return outcome
    if isinstance(outcome, HelpAsked):
        return Notice(key="help", params={"text": help_text(outcome.topic, locale=locale)})
    if isinstance(outcome, StatusList):
        rows = [
            {
                "id": i.id,
                "node": i.at.label(show_cluster=outcome.show_cluster),
                "state": i.state,
                "opened_at": str(i.opened_at),
            }
            for i in outcome.incidents
        ]
        return Notice(key="status_list", params={"incidents": rows})
    if isinstance(outcome, TopNodes):
        ranked = [
            {
                "cluster": r.at.cluster,
                "node": r.at.node,
                "memory_pressure": r.memory_pressure,
                "working_set_percent": r.working_set_percent,
                "limits_percent": r.limits_percent,
                "requests_percent": r.requests_percent,
            }
            for r in outcome.rows
        ]
        failures = [f.model_dump() for f in outcome.failures]
        return Notice(
            key="top_nodes",
            params={"rows": ranked, "failures": failures, "show_cluster": outcome.show_cluster},
        )
    if isinstance(outcome, Resolved):
        if outcome.in_thread:
            return None  # said in the incident's thread, where the asker reads it
        params = {"incident_id": outcome.incident_id, "by": outcome.by, "note": outcome.note}
        return Notice(key="resolved", params=params)
    return None  # Posted; Exported, NodeDiagnosed and KitMade are the terminal's


async def answer(
    s: BotServices, cmd: commands.Command, asker: Asker, *, incident: Incident | None = None
) -> str:
    """Carry out a command (``handle``) and present its outcome: a read asked in an
    incident thread is posted there, anything else is told to the asker only. The
    metric's word: ``ok``, ``denied`` or ``failed``."""
    try:
        outcome = await handle(cmd, asker, ChatSurface(s))
        locale = await s.diagnose.locales.for_person(asker.channel, asker.user)
        told = as_told(outcome, locale)
        if told is None:
            pass
        elif asker.thread_ts and isinstance(outcome, StatusList | TopNodes):
            await s.thread.post(asker.channel, told, incident=incident, thread_ts=asker.thread_ts)
        else:
            await s.thread.tell(asker.channel, asker.user, told, thread_ts=asker.thread_ts)
    except GpunodeError as err:
        try:
            await s.thread.tell(asker.channel, asker.user, _failed(err), thread_ts=asker.thread_ts)
        except GpunodeError:
            log.warning("could not tell %s about a failed command: %s", asker.user, err.code)
        return "failed"
    return _result(outcome)


def _register_events(app: AsyncApp, s: BotServices) -> None:
    """Events are acked by Bolt before the listener runs; the work goes to ``Background`` so
    shutdown and tests can wait for it. Slack redelivers events: each ``event_id`` once."""

    @app.event("message")
    async def on_message(body: dict[str, Any], event: dict[str, Any]) -> None:
        if event.get("bot_id") or event.get("subtype") not in (None, "thread_broadcast"):
            return
        thread_ts, ts = event.get("thread_ts"), event.get("ts")
        if not thread_ts or thread_ts == ts:
            return
        reply = threads.note_reply(
            s,
            event_id=str(body.get("event_id")),
            channel=str(event.get("channel", "")),
            thread_ts=str(thread_ts),
            user=str(event.get("user", "")),
            text=slack_unescape(str(event.get("text", ""))),
            ts=str(ts),
        )
        s.bg.spawn(reply, name="thread-reply")

    @app.event("app_mention")
    async def on_mention(body: dict[str, Any], event: dict[str, Any]) -> None:
        thread_ts = event.get("thread_ts")
        mention = _ask_in_thread(
            s,
            event_id=str(body.get("event_id")),
            channel=str(event.get("channel", "")),
            thread_ts=str(thread_ts) if thread_ts else None,
            user=str(event.get("user", "")),
            text=slack_unescape(str(event.get("text", ""))),
        )
        s.bg.spawn(mention, name="mention")


async def _ask_in_thread(
    s: BotServices, *, event_id: str, channel: str, thread_ts: str | None, user: str, text: str
) -> None:
    """``@gpunode diagnose`` (any command of the grammar) inside an incident thread, the
    thread's incident filling what it leaves out; a mention alone: the incident's status."""
    incident = await threads.mentioned_in(
        s, event_id=event_id, channel=channel, thread_ts=thread_ts
    )
    if incident is None:
        return
    at = incident_at(s.clusters, incident)
    asker = Asker(user=user, channel=channel, thread_ts=thread_ts)
    try:
        cmd = commands.parse_in_thread(text, at=at, incident=incident.id, clusters=s.clusters.names)
    except UsageError as err:
        told = _usage_notice(err)
        await s.thread.tell(channel, user, told, thread_ts=thread_ts)
        return
    await answer(s, cmd, asker, incident=incident)
