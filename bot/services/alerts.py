"""Alertmanager intake (webhook payload version 4).

A firing alert carrying a ``node`` label opens (or joins) that node's incident and runs a
diagnosis in the configured channel. A resolved alert is noted in the thread. Alertmanager
re-sends a group on every ``repeat_interval`` and on group changes: each (fingerprint,
status, startsAt) is acted on once, whatever the repeats.

Nothing in a payload is trusted: a ``node`` label that is not a Kubernetes node name is
refused, a node the cluster does not have is answered in the response (and audited), and
diagnoses are capped per request, per node and per time window (``bot.core.alert_caps``);
what is over a cap is said in one message. The HTTP route (``bot.wiring.server``) serves this
only with a bearer token, or with the explicit ``alerts.allow_unauthenticated`` opt-out.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from bot.core import actors
from bot.core.alert_caps import AlertCaps, over_cap, recent
from bot.core.commands import parse_node_name
from bot.core.validation import validation_message
from bot.errors import GpunodeError, SlackError, UsageError
from bot.render.messages import render_notice
from bot.services.background import Background
from bot.services.diagnose import DiagnoseService
from bot.services.ports import ChatPort, KubePort, StorePort
from bot.services.recording import append_entry
from bot.store.models import AuditRecord

log = logging.getLogger(__name__)
#: the settings' defaults (``alerts.*``), for callers that pass none
DEFAULT_CAPS = AlertCaps(per_request=3, per_node=1, per_window=10, window_s=600)


class Alert(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)
    status: str
    labels: dict[str, str]
    annotations: dict[str, str] = Field(default_factory=dict)
    startsAt: str = ""  # noqa: N815 - Alertmanager's field name
    fingerprint: str = ""


class AlertmanagerPayload(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)
    version: str
    groupKey: str  # noqa: N815
    status: str
    receiver: str = ""
    alerts: list[Alert]


def parse_payload(body: bytes) -> AlertmanagerPayload:
    try:
        payload = AlertmanagerPayload.model_validate_json(body)
    except ValidationError as exc:
        problem = validation_message(exc, limit=1, top="body")
        raise UsageError(f"not an Alertmanager webhook payload: {problem}") from exc
    if payload.version != "4":
        raise UsageError(f"unsupported Alertmanager payload version {payload.version!r}; want 4")
    return payload


@dataclass
class IntakeResult:
    """What one webhook request did; the HTTP response is this, as JSON."""

    diagnosing: list[str] = field(default_factory=list)
    resolved: list[str] = field(default_factory=list)
    duplicates: int = 0
    ignored: int = 0
    unknown_nodes: list[str] = field(default_factory=list)
    refused: list[dict[str, str]] = field(default_factory=list)
    skipped: list[dict[str, str]] = field(default_factory=list)
    problem: str | None = None

    def as_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


#: Slack errors that mean "the bot cannot post in the incident channel" (fix: invite the bot
#: or correct ``slack.incident_channel``), reported once rather than with every alert
CHANNEL_ERRORS = frozenset(
    {"not_in_channel", "channel_not_found", "is_archived", "invalid_arguments"}
)
#: longest label value echoed back in a response (the rest is cut)
ECHO_MAX = 80


def _echo(value: str) -> str:
    """A label value safe to echo: control characters escaped, length bounded."""
    shown = value.encode("unicode_escape").decode("ascii")
    return shown if len(shown) <= ECHO_MAX else shown[: ECHO_MAX - 3] + "..."


@dataclass(frozen=True)
class _Firing:
    node: str
    key: str
    fingerprint: str
    alertname: str


class AlertService:
    """One per process. The caps' history is per process (each replica caps its own)."""

    def __init__(
        self,
        diagnose: DiagnoseService,
        store: StorePort,
        chat: ChatPort,
        bg: Background,
        *,
        channel: str,
        clock: Callable[[], datetime],
        kube: KubePort | None = None,
        caps: AlertCaps = DEFAULT_CAPS,
    ) -> None:
        self._diagnose = diagnose
        self._store = store
        self._chat = chat
        self._bg = bg
        self._channel = channel
        self._clock = clock
        self._kube = kube
        self._caps = caps
        self._started: list[tuple[str, datetime]] = []
        #: the incident channel's last Slack error (logged once), cleared by a good post
        self.channel_problem: str | None = None

    async def intake(self, payload: AlertmanagerPayload) -> IntakeResult:
        """Act on each alert once; raise KubeError (answered 503, so Alertmanager retries)
        when the cluster cannot say which nodes exist."""
        result = IntakeResult(problem=self.channel_problem)
        firing: list[_Firing] = []
        for alert in payload.alerts:
            node = alert.labels.get("node")
            if not node:
                result.ignored += 1
                continue
            try:
                parse_node_name(node, verb="diagnose")
            except UsageError as err:
                result.refused.append({"node": _echo(node), "reason": err.message})
                continue
            fp = alert.fingerprint or f"{payload.groupKey}:{sorted(alert.labels.items())}"
            key = f"alert:{fp}:{alert.status}:{alert.startsAt}"
            name = alert.labels.get("alertname", "alert")
            if alert.status == "firing":
                firing.append(_Firing(node, key, fp, name))
            elif await self._store.remember_event(key, at=self._clock()):
                result.resolved.append(node)
                await self._note_resolved(node, name)
            else:
                result.duplicates += 1
        await self._refused(result)
        if firing:
            await self._start(firing, result)
        return result

    async def _start(self, firing: list[_Firing], result: IntakeResult) -> None:
        known = await self._known_nodes()
        now = self._clock()
        self._started = recent(self._started, now=now, caps=self._caps)
        in_request = 0
        for f in firing:
            if known is not None and f.node not in known:
                if f.node not in result.unknown_nodes:
                    result.unknown_nodes.append(f.node)
                continue
            if await self._store.seen_event(f.key):
                result.duplicates += 1
                continue
            why = over_cap(f.node, self._started, in_request=in_request, now=now, caps=self._caps)
            if why is not None:
                result.skipped.append({"node": f.node, "alertname": f.alertname, "cap": why})
                continue
            if not await self._store.remember_event(f.key, at=now):
                result.duplicates += 1  # another request took it meanwhile
                continue
            self._started.append((f.node, now))
            in_request += 1
            result.diagnosing.append(f.node)
            self._bg.spawn(self._diagnose_for(f), name=f"alert-diagnose-{f.node}")
        await self._unknown(result)
        await self._skipped(result)

    async def _known_nodes(self) -> set[str] | None:
        if self._kube is None:
            return None
        return {n.name for n in await self._kube.list_gpu_nodes()}

    async def _diagnose_for(self, f: _Firing) -> None:
        """The diagnosis an alert asked for; a channel the bot cannot post in is said once."""
        try:
            await self._diagnose.diagnose(
                f.node,
                channel=self._channel,
                user=actors.ALERTMANAGER,
                alert_fingerprint=f.fingerprint,
            )
        except SlackError as err:
            if err.code not in CHANNEL_ERRORS:
                log.warning("alert diagnosis of %s failed: %s", f.node, err.message)
                return
            if self.channel_problem != err.code:
                log.error(
                    "cannot post alert incidents in slack.incident_channel %s: Slack says %s. "
                    "Invite the bot to that channel (/invite @gpunode) or set "
                    "GPUNODE_SLACK__INCIDENT_CHANNEL to a channel it is in",
                    self._channel,
                    err.code,
                )
            self.channel_problem = err.code
            return
        except GpunodeError as err:
            # said in the thread when there is one; here one line, no traceback
            log.warning("alert diagnosis of %s failed (%s): %s", f.node, err.code, err.message)
            return
        self.channel_problem = None

    async def _audit(self, decision: str, outcome: str, detail: str) -> None:
        await self._store.append_audit(
            AuditRecord(
                at=self._clock(), actor=actors.ALERTMANAGER, action="alert", channel=self._channel,
                decision=decision, outcome=outcome, detail=detail,
            )
        )  # fmt: skip

    async def _refused(self, result: IntakeResult) -> None:
        for r in result.refused:
            await self._audit("refused", "invalid_node_label", f"{r['node']}: {r['reason']}")

    async def _unknown(self, result: IntakeResult) -> None:
        if result.unknown_nodes:
            detail = "no GPU node named " + ", ".join(result.unknown_nodes)
            await self._audit("refused", "unknown_node", detail)

    async def _skipped(self, result: IntakeResult) -> None:
        """Over a cap: one audit row and one message in the channel for the whole request."""
        if not result.skipped:
            return
        detail = ", ".join(f"{s['node']} ({s['cap']})" for s in result.skipped)
        await self._audit("skipped", "over_cap", detail)
        caps = self._caps
        text, blocks = render_notice(
            "alerts_skipped", self._diagnose.locales.channel(self._channel) or "en",
            skipped=result.skipped, per_request=caps.per_request,
            per_node=caps.per_node, per_window=caps.per_window, window_s=int(caps.window_s),
        )  # fmt: skip
        try:
            await self._chat.post(self._channel, text=text, blocks=blocks, thread_ts=None)
        except SlackError as err:
            log.warning("could not post the skipped-alerts notice: %s", err.code)

    async def _note_resolved(self, node: str, alertname: str) -> None:
        for incident in await self._store.open_incidents(node=node):
            await append_entry(
                self._store, incident.id, "alert_resolved", actors.ALERTMANAGER,
                f"{alertname} resolved", at=self._clock(),
            )  # fmt: skip
            if incident.thread_ts:
                text, blocks = render_notice(
                    "alert_resolved", self._diagnose.locales.for_thread(incident),
                    alertname=alertname, node=node,
                )  # fmt: skip
                await self._chat.post(
                    incident.channel, text=text, blocks=blocks, thread_ts=incident.thread_ts
                )
