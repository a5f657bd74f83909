"""The slash command and the thread events, translated into the use cases of
``bot.services`` (``chatops`` for the role check, ``threads`` for replies and mentions,
``timelines`` for the export). The buttons and modals are ``bot.slack.interactions``; both
are registered on the Bolt app by ``bot.slack.bolt``, and neither imports the other.

Every listener acknowledges first and hands slow work to ``Background``: Slack gives three
seconds. Parsing is pure and fast, so a usage error is answered in the ack itself.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Awaitable
from typing import Any

from slack_bolt.async_app import AsyncApp

from bot.core import commands
from bot.core.clusters import format_node_ref
from bot.core.outcomes import Notice, Refused
from bot.core.policy import Permission
from bot.errors import GpunodeError, UsageError
from bot.render.blocks import Message
from bot.render.help import help_text
from bot.render.notices import render_told
from bot.services import chatops, threads
from bot.services.chatops import BotServices
from bot.services.operations import top_across
from bot.services.prevention import prevent_node
from bot.services.timelines import upload_timeline
from bot.slack.payloads import slack_unescape

log = logging.getLogger(__name__)


def register(app: AsyncApp, s: BotServices) -> None:
    """The ``/gpunode`` command and the thread events (message, app_mention) on ``app``."""
    _register_commands(app, s)
    _register_events(app, s)


def _ack_notice(key: str, locale: str, **params: Any) -> Message:
    """A notice in the asking person's language, for a slash command's ack (not a post)."""
    return render_told(Notice(key=key, params=params), locale)


def _register_commands(app: AsyncApp, s: BotServices) -> None:
    @app.command("/gpunode")
    async def on_command(ack: Any, body: dict[str, Any]) -> None:
        # Slack escapes & < > in the text it sends; the templates escape on the way out
        text = slack_unescape(str(body.get("text", ""))).strip()
        channel, user = str(body.get("channel_id", "")), str(body.get("user_id", ""))
        # every answer here is ephemeral: in the asking person's language (bot.core.locales)
        locale = await s.diagnose.locales.for_person(channel, user)
        try:
            cmd = commands.parse(text, clusters=s.clusters.names)
        except UsageError as err:
            t, blocks = _ack_notice("usage_error", locale, message=err.message, usage=err.usage)
            await ack(text=t, blocks=blocks, response_type="ephemeral")
            s.metrics.command(_verb_of(text), "usage_error")
            return
        if s.channels and channel not in s.channels:
            t, blocks = _ack_notice("channel_not_served", locale, channel=channel)
            await ack(text=t, blocks=blocks, response_type="ephemeral")
            s.metrics.command(cmd.verb, "channel_not_served")
            return
        if isinstance(cmd, commands.Help):
            t, blocks = _ack_notice("help", locale, text=help_text(cmd.topic, locale=locale))
            await ack(text=t, blocks=blocks, response_type="ephemeral")
            s.metrics.command(cmd.verb, "ok")
            return
        if isinstance(cmd, commands.Status):
            # a local store read: answered in the ack itself (one round trip, no Web API
            # call, nothing left running after the ack)
            outcome = "ok"
            try:
                # a named cluster is checked against the user's scope, as `top CLUSTER` is
                denied = await chatops.denied(
                    s, "view", user=user, channel=channel, cluster=cmd.cluster
                )
                if denied is not None:
                    t, blocks = render_told(Refused(code=denied.code, params=denied.params), locale)
                    outcome = "denied"
                else:
                    t, blocks = await _status_notice(s, cmd.node, locale, cmd.cluster)
            except GpunodeError as err:
                t, blocks = _ack_notice(
                    "command_failed",
                    locale,
                    message=err.message,
                    code=err.code,
                    error_key=err.key,
                    error_params=err.params,
                )
                outcome = "failed"
            await ack(text=t, blocks=blocks, response_type="ephemeral")
            s.metrics.command(cmd.verb, outcome)
            return
        t, blocks = _ack_notice("command_started", locale, command=canonical(cmd))
        await ack(text=t, blocks=blocks, response_type="ephemeral")
        work = _run(s, cmd, channel=channel, user=user)
        s.bg.spawn(_counted(s, cmd.verb, work), name=f"cmd-{cmd.verb}")


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


def canonical(cmd: commands.Command) -> str:
    """The command as gpunode understood it (validated words only: never the raw text)."""
    words: list[str] = [cmd.verb]
    if isinstance(cmd, commands.Diagnose | commands.Prevent):
        words.append(format_node_ref(cmd.cluster or "", cmd.node))
    elif isinstance(cmd, commands.Top) and cmd.cluster:
        words.append(cmd.cluster)
    elif isinstance(cmd, commands.Timeline | commands.Resolve) and cmd.incident:
        words.append(cmd.incident)
    return " ".join(words)


async def _status_notice(
    s: BotServices, node: str | None, locale: str, cluster: str | None = None
) -> tuple[str, list[dict[str, Any]]]:
    """Open incidents (of ``node``, in ``cluster`` or in any cluster)."""
    rows = [
        {"id": i.id, "node": chatops.label(s, i), "state": i.state, "opened_at": str(i.opened_at)}
        for i in await s.ops.status(node, cluster)
    ]
    return _ack_notice("status_list", locale, incidents=rows)


async def _cluster_of(s: BotServices, cmd: Any, channel: str) -> str | None:
    """The cluster a command acts in (None: a read across clusters). Diagnose: the one it
    names, else the channel's, else the default (prevent too); resolve and timeline: their
    incident's."""
    if isinstance(cmd, commands.Diagnose | commands.Prevent):
        return s.clusters.choose(cmd.cluster, channel=channel)
    if isinstance(cmd, commands.Top):
        return s.clusters.choose(cmd.cluster) if cmd.cluster else None
    if isinstance(cmd, commands.Resolve | commands.Timeline) and cmd.incident:
        incident = await s.store.get_incident(cmd.incident)
        return incident.cluster or None if incident is not None else None
    return None


async def _run(s: BotServices, cmd: Any, *, channel: str, user: str) -> str:
    """Carry out a command; its outcome: ``ok``, ``denied`` or ``failed``."""
    try:
        needs: Permission = (
            "diagnose"
            if isinstance(cmd, commands.Diagnose)
            else "resolve"
            if isinstance(cmd, commands.Resolve)
            else "view"
        )
        cluster = await _cluster_of(s, cmd, channel)
        if not await chatops.permitted(s, needs, user=user, channel=channel, cluster=cluster):
            return "denied"
        if isinstance(cmd, commands.Diagnose):
            done = await s.diagnose.diagnose(cmd.node, channel=channel, user=user, cluster=cluster)
            if done.error is not None:  # told in the thread or to the user already
                return "failed"
        elif isinstance(cmd, commands.Prevent):
            assert cluster is not None  # _cluster_of chooses one for prevent
            await prevent_node(
                s.clusters.port(cluster),
                s.store,
                s.chat,
                cmd.node,
                channel=channel,
                user=user,
                now=s.clock(),
                locales=s.diagnose.locales,
                cluster=cluster,
            )
        elif isinstance(cmd, commands.Top):
            report = await top_across(s.clusters, cluster=cluster)
            rows = [dataclasses.asdict(r) for r in report.rows]
            failures = [dataclasses.asdict(f) for f in report.failures]
            told = Notice(
                key="top_nodes",
                params={"rows": rows, "failures": failures, "show_cluster": s.clusters.multi},
            )
            await s.thread.tell(channel, user, told)
        elif isinstance(cmd, commands.Timeline):
            await upload_timeline(s, cmd.incident, channel=channel, user=user, thread_ts=None)
        elif isinstance(cmd, commands.Resolve):
            incident = await s.ops.resolve(cmd.incident, by=user, note=cmd.note)
            told = Notice(
                key="resolved",
                params={"incident_id": incident.id, "by": user, "note": cmd.note},
            )
            if incident.thread_ts:
                await s.thread.post(incident.channel, told, incident=incident)
                await s.diagnose.refresh_root(incident.id)
            if s.anchors is not None:  # the head, outside the store (and in the thread)
                await s.anchors.anchor(channel=incident.channel, thread_ts=incident.thread_ts)
            else:
                await s.thread.tell(channel, user, told)
    except GpunodeError as err:
        told = Notice(
            key="command_failed",
            params={
                "message": err.message,
                "code": err.code,
                "error_key": err.key,
                "error_params": err.params,
            },
        )
        try:
            await s.thread.tell(channel, user, told)
        except GpunodeError:
            log.warning("could not tell %s about a failed command: %s", user, err.code)
        return "failed"
    return "ok"


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
        mention = threads.mentioned(
            s,
            event_id=str(body.get("event_id")),
            channel=str(event.get("channel", "")),
            thread_ts=str(thread_ts) if thread_ts else None,
            user=str(event.get("user", "")),
            text=slack_unescape(str(event.get("text", ""))),
        )
        s.bg.spawn(mention, name="mention")
