"""Incident lifecycle and timeline entries (pure: time, ids and numbers are arguments).

States move one way: ``investigating -> mitigating -> resolved``. A diagnose of a node that
has an open incident joins that incident (``find_joinable``); a resolved incident is never
rejoined, a new one opens instead, so each incident's timeline tells one story. The store
allocates incident numbers; ``format_incident_id`` turns them into ``INC-0007``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any, Literal, TypeVar

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field

from bot.errors import GpunodeError

IncidentState = Literal["investigating", "mitigating", "resolved"]
TimelineKind = Literal[
    "opened",
    "diagnosis",
    "evidence",
    "finding",
    "message",
    "action_requested",
    "approval",
    "action_result",
    "alert_firing",
    "alert_resolved",
    "status",
    "resolved",
    "note",
]

_INCIDENT_ID = re.compile(r"(?:inc-?|#)?0*(\d{1,9})", re.IGNORECASE)


class IncidentStateError(GpunodeError):
    """A lifecycle transition that is not allowed (e.g. resolving twice)."""

    code = "incident_state"


class Incident(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str = Field(description="INC-0007")
    number: int = Field(ge=1)
    node: str
    channel: str = ""
    thread_ts: str | None = Field(None, description="Slack thread of the incident")
    root_ts: str | None = Field(None, description="ts of the thread's root message")
    state: IncidentState = "investigating"
    opened_at: AwareDatetime
    resolved_at: AwareDatetime | None = None
    opened_by: str = Field(description="Slack user id, 'alertmanager' or 'gpunode'")
    alert_fingerprint: str | None = None
    resolution_note: str = ""
    cluster: str = Field(description="the cluster the node is in ('' before clusters)")
    locale: str = Field("en", description="the thread's language (bot.core.model.locales), kept")

    @property
    def is_open(self) -> bool:
        return self.state != "resolved"


class TimelineEntry(BaseModel):
    """One line of an incident's record, as a writer makes it. ``seq`` is the store's
    insertion order (tiebreak). It names no cluster: the line is its incident's, and the
    store keeps it with that incident's cluster (read back as a ``TimelineRow``)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    incident_id: str
    at: AwareDatetime
    kind: TimelineKind
    actor: str = Field(description="Slack user id, 'gpunode' or 'alertmanager'")
    text: str = ""
    data: dict[str, Any] = Field(default_factory=dict)
    seq: int | None = None

    @property
    def said(self) -> dict[str, Any] | None:
        """What the entry says, as data for a presenter to word: ``{"code", "params"}``
        (``data["said"]``, written by ``said``); None for an entry that carries none (a
        person's words, or a row written by an older version: its ``text`` is shown as
        stored)."""
        value = self.data.get("said")
        if isinstance(value, dict) and isinstance(value.get("code"), str):
            return {"code": value["code"], "params": dict(value.get("params") or {})}
        return None


class TimelineRow(TimelineEntry):
    """A timeline entry as the store keeps it: with its incident's cluster, copied from the
    incident's row when it was appended (``''``: an incident stored before clusters existed,
    not yet adopted; ``ClusterRegistry.stored`` reads that)."""

    cluster: str = Field(description="its incident's cluster, as the store keeps it")


def said(code: str, /, **params: Any) -> dict[str, Any]:
    """An entry's ``data`` naming what it says (``TimelineEntry.said``): ``code`` picks the
    sentence (``templates/sentences/timeline.j2``), ``params`` (JSON values) fill it. The
    entry's ``text`` stays English for logs and for tools that read the store."""
    return {"said": {"code": code, "params": params}}


def format_incident_id(number: int) -> str:
    """``7`` -> ``"INC-0007"``; at least four digits, more when the number needs them."""
    if number < 1:
        raise ValueError(f"incident numbers start at 1, got {number}")
    return f"INC-{number:04d}"


def parse_incident_number(text: str) -> int | None:
    """``"INC-0007"``, ``"inc-7"``, ``"#7"`` or ``"7"`` -> ``7``; anything else -> None."""
    match = _INCIDENT_ID.fullmatch(text.strip())
    if match is None:
        return None
    number = int(match.group(1))
    return number if number >= 1 else None


def open_incident(
    number: int,
    node: str,
    *,
    at: datetime,
    opened_by: str,
    channel: str = "",
    alert_fingerprint: str | None = None,
    reason: str = "",
    cluster: str,
    locale: str,
) -> tuple[Incident, TimelineEntry]:
    """A new incident in ``investigating`` and its ``opened`` timeline entry. ``locale``:
    the language its thread keeps (``bot.core.model.locales.opening_locale``)."""
    incident = Incident(
        cluster=cluster,
        id=format_incident_id(number),
        number=number,
        node=node,
        channel=channel,
        opened_at=at,
        opened_by=opened_by,
        alert_fingerprint=alert_fingerprint,
        locale=locale,
    )
    entry = TimelineEntry(
        incident_id=incident.id,
        at=at,
        kind="opened",
        actor=opened_by,
        text=reason or f"incident opened for node {node}",
        data={"node": node, "channel": channel},
    )
    return incident, entry


def find_joinable(incidents: Iterable[Incident], node: str, cluster: str) -> Incident | None:
    """The open incident a new diagnose of ``cluster``/``node`` joins, or None when a new one
    must open. A node of the same name in another cluster is another node.

    Resolved incidents never qualify. When several are open (should not happen; the store
    opens atomically) the oldest wins so every caller picks the same one.
    """
    candidates = [i for i in incidents if (i.cluster, i.node) == (cluster, node) and i.is_open]
    return min(candidates, key=lambda i: i.number) if candidates else None


def start_mitigation(
    incident: Incident, *, at: datetime, actor: str, text: str, data: dict[str, Any] | None = None
) -> tuple[Incident, TimelineEntry]:
    """An action was requested or ran: ``investigating -> mitigating``.

    Idempotent for an incident already mitigating (a second action is still an action).
    Refused once resolved: act on a new incident instead.
    """
    if incident.state == "resolved":
        raise IncidentStateError(
            f"{incident.id} is resolved; run diagnose again to open a new incident first"
        )
    updated = incident.model_copy(update={"state": "mitigating"})
    entry = TimelineEntry(
        incident_id=incident.id,
        at=at,
        kind="status",
        actor=actor,
        text=text,
        data={"from": incident.state, "to": "mitigating", **(data or {})},
    )
    return updated, entry


def resolve_incident(
    incident: Incident, *, at: datetime, actor: str, note: str = ""
) -> tuple[Incident, TimelineEntry]:
    """Close the incident. Resolving twice is refused so the record keeps one resolution."""
    if incident.state == "resolved":
        when = incident.resolved_at.isoformat() if incident.resolved_at else "earlier"
        raise IncidentStateError(
            f"{incident.id} is already resolved ({when}); diagnose the node again to open "
            "a new incident"
        )
    if at < incident.opened_at:
        raise IncidentStateError(f"{incident.id} cannot be resolved before it was opened")
    updated = incident.model_copy(
        update={"state": "resolved", "resolved_at": at, "resolution_note": note}
    )
    entry = TimelineEntry(
        incident_id=incident.id,
        at=at,
        kind="resolved",
        actor=actor,
        text=note or "resolved",
        # no note: the entry says only that it was resolved (a presenter words that)
        data={"from": incident.state} | ({} if note else said("resolved")),
    )
    return updated, entry


#: an entry, or a stored row (``order_timeline`` keeps which)
_Entry = TypeVar("_Entry", bound=TimelineEntry)
# "opened" sorts first and "resolved" last among entries sharing one timestamp.
_KIND_RANK: dict[str, int] = {"opened": 0, "resolved": 2}


def order_timeline(entries: Sequence[_Entry]) -> list[_Entry]:
    """Chronological order; ties keep ``seq`` (insertion) order, opened first, resolved last."""
    indexed = list(enumerate(entries))
    indexed.sort(
        key=lambda pair: (
            pair[1].at,
            _KIND_RANK.get(pair[1].kind, 1),
            pair[1].seq if pair[1].seq is not None else -1,
            pair[0],
        )
    )
    return [entry for _, entry in indexed]
