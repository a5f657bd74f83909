"""Alertmanager intake (webhook payload version 4).

A firing alert carrying a ``node`` label opens (or joins) that node's incident and runs a
diagnosis in the configured channel. A resolved alert is noted in the thread. Alertmanager
re-sends a group on every ``repeat_interval`` and on group changes: each (fingerprint,
status, startsAt) is acted on once, whatever the repeats.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from bot.core.incidents import TimelineEntry
from bot.errors import UsageError
from bot.render.messages import render_notice
from bot.services.background import Background
from bot.services.diagnose import DiagnoseService
from bot.services.ports import ChatPort


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
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "body"
        raise UsageError(f"not an Alertmanager webhook payload: {where}: {first['msg']}") from exc
    if payload.version != "4":
        raise UsageError(f"unsupported Alertmanager payload version {payload.version!r}; want 4")
    return payload


@dataclass
class IntakeResult:
    diagnosing: list[str] = field(default_factory=list)
    resolved: list[str] = field(default_factory=list)
    duplicates: int = 0
    ignored: int = 0


class AlertService:
    def __init__(
        self,
        diagnose: DiagnoseService,
        store: Any,
        chat: ChatPort,
        bg: Background,
        *,
        channel: str,
        clock: Callable[[], datetime],
    ) -> None:
        self._diagnose = diagnose
        self._store = store
        self._chat = chat
        self._bg = bg
        self._channel = channel
        self._clock = clock

    async def intake(self, payload: AlertmanagerPayload) -> IntakeResult:
        result = IntakeResult()
        for alert in payload.alerts:
            node = alert.labels.get("node")
            if not node:
                result.ignored += 1
                continue
            fp = alert.fingerprint or f"{payload.groupKey}:{sorted(alert.labels.items())}"
            key = f"alert:{fp}:{alert.status}:{alert.startsAt}"
            if not await self._store.remember_event(key, at=self._clock()):
                result.duplicates += 1
                continue
            name = alert.labels.get("alertname", "alert")
            if alert.status == "firing":
                result.diagnosing.append(node)
                self._bg.spawn(
                    self._diagnose.diagnose(
                        node, channel=self._channel, user="alertmanager", alert_fingerprint=fp
                    ),
                    name=f"alert-diagnose-{node}",
                )
            else:
                result.resolved.append(node)
                await self._note_resolved(node, name)
        return result

    async def _note_resolved(self, node: str, alertname: str) -> None:
        for incident in await self._store.open_incidents(node=node):
            now = self._clock()
            await self._store.append_timeline(
                TimelineEntry(
                    incident_id=incident.id,
                    at=now,
                    kind="alert_resolved",
                    actor="alertmanager",
                    text=f"{alertname} resolved",
                    data={},
                )
            )
            if incident.thread_ts:
                text, blocks = render_notice("alert_resolved", alertname=alertname, node=node)
                await self._chat.post(
                    incident.channel, text=text, blocks=blocks, thread_ts=incident.thread_ts
                )
