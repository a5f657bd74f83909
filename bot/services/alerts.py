"""Alertmanager intake (webhook payload version 4).

A firing alert carrying a ``node`` label opens (or joins) that node's incident and runs a
diagnosis in the configured channel. A resolved alert is noted in the thread. Alertmanager
re-sends a group on every ``repeat_interval`` and on group changes: each (fingerprint,
status, startsAt) is acted on once, whatever the repeats.

Nothing in a payload is trusted: a ``node`` label that is not a Kubernetes node name is
refused, a node the cluster does not have is answered in the response (and audited), and
diagnoses are capped per request, per node and per time window (``bot.core.governance.alert_caps``);
what is over a cap is said in one message.

Many clusters: the cluster is the alert's ``cluster`` label (``alerts.cluster_label``); an
alert without it is about the default cluster, and one naming a cluster gpunode does not
know is refused (answered and audited, naming the known clusters). Caps count per
cluster and node. When no cluster asked can say which nodes it has, the request is
answered 503 so Alertmanager retries; when only some cannot, their alerts are refused
(not remembered, so a later notification tries again) and the others go ahead.

The HTTP route (``bot.wiring.server``) serves this
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

from bot.core.governance.alert_caps import AlertCaps, over_cap, recent
from bot.core.governance.commands import parse_node_name
from bot.core.model import actors
from bot.core.model.clusters import NodeRef, cluster_name_problem, format_node_ref
from bot.core.model.validation import validation_message
from bot.core.reporting.outcomes import notice
from bot.core.reporting.records import NO_CLUSTER, AuditRecord
from bot.errors import GpunodeError, SlackError, UnknownClusterError, UsageError
from bot.services.background import Background
from bot.services.clusters import fan_out
from bot.services.diagnose import DiagnoseService
from bot.services.ports import ChatPort, KubePort, StorePort
from bot.services.recording import append_entry

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
        raise UsageError(
            f"not an Alertmanager webhook payload: {problem}",
            key="alert_payload_invalid",
            params={"error": problem},
        ) from exc
    if payload.version != "4":
        raise UsageError(
            f"unsupported Alertmanager payload version {payload.version!r}; want 4",
            key="alert_payload_version",
            params={"version": payload.version},
        )
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
    cluster: str
    label: str  # how messages and the response name it: [cluster/]node


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
        check_nodes: bool = False,
        caps: AlertCaps = DEFAULT_CAPS,
        cluster_label: str = "cluster",
    ) -> None:
        self._diagnose = diagnose
        self._store = store
        self._chat = chat
        self._bg = bg
        self._channel = channel
        self._clock = clock
        #: whether to check, in each alert's cluster, that the alerted nodes exist
        self._check_nodes = check_nodes
        self._clusters = diagnose.clusters
        self._cluster_label = cluster_label
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
                cluster = self._cluster_of(alert)
            except (UsageError, UnknownClusterError) as err:
                refusal = {"node": _echo(node), "reason": err.message}
                if raw := alert.labels.get(self._cluster_label):
                    refusal["cluster"] = _echo(raw)
                result.refused.append(refusal)
                outcome = (
                    "unknown_cluster"
                    if isinstance(err, UnknownClusterError)
                    else "invalid_cluster_label"
                    if "cluster" in refusal
                    else "invalid_node_label"
                )
                await self._audit(
                    "refused",
                    outcome,
                    f"{refusal['node']}: {err.message}",
                    "alert_label_refused",
                    {
                        "node": refusal["node"],
                        "error": err.message,
                        "error_key": err.key,
                        "error_params": err.params,
                    },
                )
                continue
            fp = alert.fingerprint or f"{payload.groupKey}:{sorted(alert.labels.items())}"
            key = f"alert:{fp}:{alert.status}:{alert.startsAt}"
            name = alert.labels.get("alertname", "alert")
            label = format_node_ref(cluster, node, show_cluster=self._clusters.multi)
            if alert.status == "firing":
                firing.append(_Firing(node, key, fp, name, cluster, label))
            elif await self._store.remember_event(key, at=self._clock()):
                result.resolved.append(label)
                await self._note_resolved(node, name, cluster=cluster, label=label)
            else:
                result.duplicates += 1
        if firing:
            await self._start(firing, result)
        return result

    def _cluster_of(self, alert: Alert) -> str:
        """The alert's cluster label, else the default cluster; refused when unknown."""
        raw = alert.labels.get(self._cluster_label)
        if not raw:
            return self._clusters.default
        if problem := cluster_name_problem(raw):
            raise UsageError(f"label {self._cluster_label}: {problem}")
        if raw not in self._clusters.names:
            raise UnknownClusterError(raw, tuple(sorted(self._clusters.names)))
        return raw

    async def _start(self, firing: list[_Firing], result: IntakeResult) -> None:
        known = await self._known_nodes(tuple(dict.fromkeys(f.cluster for f in firing)))
        now = self._clock()
        self._started = recent(self._started, now=now, caps=self._caps)
        in_request = 0
        for f in firing:
            nodes = known.get(f.cluster) if known is not None else None
            if isinstance(nodes, GpunodeError):
                result.refused.append({"node": f.label, "reason": nodes.message})
                await self._audit("refused", nodes.code, f"{f.label}: {nodes.message}")
                continue
            if nodes is not None and f.node not in nodes:
                if f.label not in result.unknown_nodes:
                    result.unknown_nodes.append(f.label)
                continue
            if await self._store.seen_event(f.key):
                result.duplicates += 1
                continue
            why = over_cap(f.label, self._started, in_request=in_request, now=now, caps=self._caps)
            if why is not None:
                result.skipped.append({"node": f.label, "alertname": f.alertname, "cap": why})
                continue
            if not await self._store.remember_event(f.key, at=now):
                result.duplicates += 1  # another request took it meanwhile
                continue
            self._started.append((f.label, now))
            in_request += 1
            result.diagnosing.append(f.label)
            self._bg.spawn(self._diagnose_for(f), name=f"alert-diagnose-{f.label}")
        await self._unknown(result)
        await self._skipped(result)

    async def _known_nodes(
        self, clusters: tuple[str, ...]
    ) -> dict[str, set[str] | GpunodeError] | None:
        """Each cluster's GPU node names, or the error that kept it from answering. Raises
        that error when no cluster answered (the request is retried as a whole)."""
        if not self._check_nodes:
            return None

        async def ask(_name: str, kube: KubePort) -> set[str]:
            return {n.name for n in await kube.list_gpu_nodes()}

        answers = await fan_out(self._clusters, ask, clusters=clusters)
        errors = [a.error for a in answers if a.error is not None]
        if errors and len(errors) == len(answers):
            raise errors[0]
        return {a.cluster: a.error or a.value or set() for a in answers}

    async def _diagnose_for(self, f: _Firing) -> None:
        """The diagnosis an alert asked for; a channel the bot cannot post in is said once."""
        try:
            await self._diagnose.diagnose(
                NodeRef(cluster=f.cluster, node=f.node),
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

    async def _audit(
        self,
        decision: str,
        outcome: str,
        detail: str,
        code: str = "",
        params: dict[str, Any] | None = None,
    ) -> None:
        """One audit row of the intake (``code`` and ``params``: the detail as data)."""
        await self._store.append_audit(
            AuditRecord(
                at=self._clock(),
                actor=actors.ALERTMANAGER,
                action="alert",
                channel=self._channel,
                decision=decision,
                outcome=outcome,
                detail=detail,
                detail_code=code,
                detail_params=params or {},
                cluster=NO_CLUSTER,  # the intake, across the clusters it serves
            )
        )

    async def _unknown(self, result: IntakeResult) -> None:
        if result.unknown_nodes:
            detail = "no GPU node named " + ", ".join(result.unknown_nodes)
            nodes = list(result.unknown_nodes)
            await self._audit("refused", "unknown_node", detail, "unknown_nodes", {"nodes": nodes})

    async def _skipped(self, result: IntakeResult) -> None:
        """Over a cap: one audit row and one message in the channel for the whole request."""
        if not result.skipped:
            return
        detail = ", ".join(f"{s['node']} ({s['cap']})" for s in result.skipped)
        await self._audit("skipped", "over_cap", detail)
        caps = self._caps
        told = notice(
            "alerts_skipped",
            skipped=result.skipped,
            per_request=caps.per_request,
            per_node=caps.per_node,
            per_window=caps.per_window,
            window_s=int(caps.window_s),
        )
        try:
            await self._diagnose.thread.post(self._channel, told)
        except SlackError as err:
            log.warning("could not post the skipped-alerts notice: %s", err.code)

    async def _note_resolved(self, node: str, alertname: str, *, cluster: str, label: str) -> None:
        for incident in await self._store.open_incidents(node=node, cluster=cluster):
            await append_entry(
                self._store,
                incident.id,
                "alert_resolved",
                actors.ALERTMANAGER,
                f"{alertname} resolved",
                at=self._clock(),
            )
            if incident.thread_ts:
                told = notice("alert_resolved", alertname=alertname, node=label)
                await self._diagnose.thread.post(incident.channel, told, incident=incident)
