"""The Bolt AsyncApp: slash command, thread events, and (via ``bot.slack.interactions``)
the tier buttons and modals.

Every listener acknowledges first and hands slow work to ``Background``: Slack gives three
seconds. Parsing is pure and fast, so a usage error is answered in the ack itself.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from slack_bolt.async_app import AsyncApp
from slack_sdk.web.async_client import AsyncWebClient

from bot.core import commands
from bot.core.incidents import TimelineEntry
from bot.core.policy import Deny, Permission, authorize
from bot.errors import GpunodeError, UsageError
from bot.render.acting import notice as _acting_notice
from bot.render.help import help_text
from bot.render.messages import render_notice
from bot.services.background import Background
from bot.services.diagnose import DiagnoseService
from bot.services.operations import IncidentOps, top_nodes
from bot.services.ports import ChatPort, KubePort
from bot.slack.edge import Malformed
from bot.slack.payloads import slack_unescape
from bot.store.models import AuditRecord

log = logging.getLogger(__name__)


@dataclass
class BotServices:
    kube: KubePort
    store: Any
    chat: ChatPort
    diagnose: DiagnoseService
    ops: IncidentOps
    bg: Background
    clock: Callable[[], datetime]
    channels: frozenset[str] = frozenset()  # empty = serve every channel
    act: Any = None  # bot.services.act.ActService when actions are enabled


def build_app(
    *,
    client: AsyncWebClient,
    signing_secret: str | None,
    services: BotServices,
    socket_mode: bool = False,
) -> AsyncApp:
    app = AsyncApp(
        client=client,
        signing_secret=signing_secret,
        request_verification_enabled=not socket_mode,
        process_before_response=False,
    )
    _register_commands(app, services)
    _register_events(app, services)
    if services.act is not None:
        from bot.slack.interactions import register_interactions

        register_interactions(app, services)
    return app


def render_refused(reason: str, locale: str = "en") -> tuple[str, list[dict[str, Any]]]:
    return _acting_notice("refused", locale, reason=reason)


def _register_commands(app: AsyncApp, s: BotServices) -> None:
    @app.command("/gpunode")
    async def on_command(ack: Any, body: dict[str, Any]) -> None:
        # Slack escapes & < > in the text it sends; the templates escape on the way out
        text = slack_unescape(str(body.get("text", ""))).strip()
        channel, user = str(body.get("channel_id", "")), str(body.get("user_id", ""))
        # every answer here is ephemeral: in the asking person's language (bot.core.locales)
        locale = await s.diagnose.locales.for_person(channel, user)
        try:
            cmd = commands.parse(text)
        except UsageError as err:
            t, blocks = render_notice("usage_error", locale, message=err.message, usage=err.usage)
            await ack(text=t, blocks=blocks, response_type="ephemeral")
            return
        if s.channels and channel not in s.channels:
            t, blocks = render_notice("channel_not_served", locale, channel=channel)
            await ack(text=t, blocks=blocks, response_type="ephemeral")
            return
        if isinstance(cmd, commands.Help):
            t, blocks = render_notice("help", locale, text=help_text(cmd.topic, locale=locale))
            await ack(text=t, blocks=blocks, response_type="ephemeral")
            return
        if isinstance(cmd, commands.Status):
            # a local store read: answered in the ack itself (one round trip, no Web API
            # call, nothing left running after the ack)
            try:
                denied = await _denied(s, "view", user=user, channel=channel)
                if denied is not None:
                    t, blocks = render_refused(denied.reason, locale)
                else:
                    t, blocks = await _status_notice(s, cmd.node, locale)
            except GpunodeError as err:
                t, blocks = render_notice(
                    "command_failed", locale, message=err.message, code=err.code
                )
            await ack(text=t, blocks=blocks, response_type="ephemeral")
            return
        t, blocks = render_notice("command_started", locale, command=canonical(cmd))
        await ack(text=t, blocks=blocks, response_type="ephemeral")
        s.bg.spawn(_run(s, cmd, channel=channel, user=user), name=f"cmd-{cmd.verb}")


def canonical(cmd: commands.Command) -> str:
    """The command as gpunode understood it (validated words only: never the raw text)."""
    words: list[str] = [cmd.verb]
    if isinstance(cmd, commands.Diagnose):
        words.append(cmd.node)
    elif isinstance(cmd, commands.Timeline | commands.Resolve) and cmd.incident:
        words.append(cmd.incident)
    return " ".join(words)


async def _status_notice(
    s: BotServices, node: str | None, locale: str
) -> tuple[str, list[dict[str, Any]]]:
    rows = [
        {"id": i.id, "node": i.node, "state": i.state, "opened_at": str(i.opened_at)}
        for i in await s.ops.status(node)
    ]
    return render_notice("status_list", locale, incidents=rows)


async def _denied(
    s: BotServices, permission: Permission, *, user: str, channel: str
) -> Deny | None:
    """The policy's refusal of ``permission`` for ``user`` (audited), or None if allowed."""
    if s.act is None:
        return None  # actions (and with them the policy) are not enabled
    decision = authorize(await s.act.principal(user, channel), permission, s.act.deps.policy)
    if isinstance(decision, Deny):
        await s.act.deps.audit(
            actor=user, action=permission, channel=channel, decision="denied",
            detail=decision.reason,
        )  # fmt: skip
        return decision
    return None


async def permitted(
    s: BotServices, permission: Permission, *, user: str, channel: str, thread_ts: str | None = None
) -> bool:
    """The policy's ``can_<permission>`` for ``user``; a refusal is told and audited."""
    if s.act is None:
        return True  # actions (and with them the policy) are not enabled
    decision = authorize(await s.act.principal(user, channel), permission, s.act.deps.policy)
    if isinstance(decision, Deny):
        await s.act.deps.refuse(
            channel, user, decision.reason, thread_ts=thread_ts,
            audit={"action": permission, "decision": "denied"},
        )  # fmt: skip
        return False
    return True


async def report_malformed(s: BotServices, m: Malformed) -> None:
    """A signed request gpunode could not use: an audit row, and the user told if known."""
    await s.store.append_audit(
        AuditRecord(
            at=s.clock(), actor=m.user or "unknown", action=f"slack.{m.kind}",
            channel=m.channel or "", decision="refused", outcome="malformed_request",
            detail=m.problem,
        )
    )  # fmt: skip
    if m.user and m.channel:
        locale = await s.diagnose.locales.for_person(m.channel, m.user)
        t, blocks = render_notice("malformed_request", locale, problem=m.problem)
        try:
            await s.chat.post_ephemeral(m.channel, m.user, text=t, blocks=blocks)
        except GpunodeError as err:
            log.warning("could not tell %s about a malformed request: %s", m.user, err.code)


async def _run(s: BotServices, cmd: Any, *, channel: str, user: str) -> None:
    locale = await s.diagnose.locales.for_person(channel, user)  # cached since the ack
    try:
        needs: Permission = (
            "diagnose" if isinstance(cmd, commands.Diagnose)
            else "resolve" if isinstance(cmd, commands.Resolve) else "view"
        )  # fmt: skip
        if not await permitted(s, needs, user=user, channel=channel):
            return
        if isinstance(cmd, commands.Diagnose):
            await s.diagnose.diagnose(cmd.node, channel=channel, user=user)
        elif isinstance(cmd, commands.Top):
            ranks = await top_nodes(s.kube)
            rows = [dataclasses.asdict(r) for r in ranks]
            t, blocks = render_notice("top_nodes", locale, rows=rows)
            await s.chat.post_ephemeral(channel, user, text=t, blocks=blocks)
        elif isinstance(cmd, commands.Timeline):
            await upload_timeline(s, cmd.incident, channel=channel, user=user, thread_ts=None)
        elif isinstance(cmd, commands.Resolve):
            incident = await s.ops.resolve(cmd.incident, by=user, note=cmd.note)
            where = s.diagnose.locales.for_thread(incident) if incident.thread_ts else locale
            t, blocks = render_notice(
                "resolved", where, incident_id=incident.id, by=user, note=cmd.note
            )
            if incident.thread_ts:
                await s.chat.post(
                    incident.channel, text=t, blocks=blocks, thread_ts=incident.thread_ts
                )
                await s.diagnose.refresh_root(incident.id)
            else:
                await s.chat.post_ephemeral(channel, user, text=t, blocks=blocks)
    except GpunodeError as err:
        t, blocks = render_notice("command_failed", locale, message=err.message, code=err.code)
        try:
            await s.chat.post_ephemeral(channel, user, text=t, blocks=blocks)
        except GpunodeError:
            log.warning("could not tell %s about a failed command: %s", user, err.code)


async def upload_timeline(
    s: BotServices, incident_ref: str | None, *, channel: str, user: str, thread_ts: str | None
) -> None:
    """The postmortem draft (charts, Markdown, self-contained HTML) into the thread."""
    from bot.services.postmortem import export_postmortem, upload_postmortem

    incident = await s.ops.resolve_id(incident_ref, channel=channel, thread_ts=thread_ts)
    cluster = str(getattr(s.kube, "cluster_name", "") or "")
    files = await export_postmortem(
        s.store, s.chat.user_name, incident, cluster=cluster, now=s.clock(),
        locale=s.diagnose.locales.for_thread(incident),
    )  # fmt: skip
    names = await upload_postmortem(s.chat, incident, files)
    await s.store.append_timeline(
        TimelineEntry(
            incident_id=incident.id,
            at=s.clock(),
            kind="note",
            actor=user,
            text="postmortem draft exported",
            data={"files": names},
        )
    )


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
        s.bg.spawn(_note_reply(s, str(body.get("event_id")), event), name="thread-reply")

    @app.event("app_mention")
    async def on_mention(body: dict[str, Any], event: dict[str, Any]) -> None:
        s.bg.spawn(_mentioned(s, str(body.get("event_id")), event), name="mention")


async def _note_reply(s: BotServices, event_id: str, event: dict[str, Any]) -> None:
    """A person's reply in an incident thread goes into the timeline, once per event."""
    if not await s.store.remember_event(f"event:{event_id}", at=s.clock()):
        return
    incident = await s.store.find_incident_by_thread(
        str(event.get("channel", "")), str(event["thread_ts"])
    )
    if incident is None:
        return
    await s.store.append_timeline(
        TimelineEntry(
            incident_id=incident.id, at=s.clock(), kind="message",
            actor=str(event.get("user", "")), text=slack_unescape(str(event.get("text", ""))),
            data={"ts": event.get("ts")},
        )
    )  # fmt: skip


async def _mentioned(s: BotServices, event_id: str, event: dict[str, Any]) -> None:
    """``@gpunode diagnose|timeline`` inside an incident thread; anything else: its status."""
    if not await s.store.remember_event(f"event:{event_id}", at=s.clock()):
        return
    channel, user = str(event.get("channel", "")), str(event.get("user", ""))
    thread_ts = event.get("thread_ts")
    incident = await s.store.find_incident_by_thread(channel, thread_ts) if thread_ts else None
    if incident is None:
        return
    words = str(event.get("text", "")).lower().split()
    if "diagnose" in words:
        if await permitted(s, "diagnose", user=user, channel=channel, thread_ts=thread_ts):
            await s.diagnose.diagnose(incident.node, channel=channel, user=user)
    elif not await permitted(s, "view", user=user, channel=channel, thread_ts=thread_ts):
        return
    elif "timeline" in words:
        await upload_timeline(s, incident.id, channel=channel, user=user, thread_ts=None)
    else:
        t, blocks = render_notice(
            "status_list", s.diagnose.locales.for_thread(incident),
            incidents=[{"id": incident.id, "node": incident.node, "state": incident.state,
                        "opened_at": str(incident.opened_at)}],
        )  # fmt: skip
        await s.chat.post(channel, text=t, blocks=blocks, thread_ts=thread_ts)
