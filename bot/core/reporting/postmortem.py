"""The postmortem draft of one incident, as data (pure: time, names and records are arguments).

``build_postmortem`` turns what the store kept (the incident, its timeline, its evidence
snapshots, its actions with their approvals) into the document a person edits into the
postmortem, in the shape incident tools export (Dispatch, incident.io):
- a summary: node, cluster, duration, the verdict at the start and at the end, the impact
  (pods evicted or restarted by actions, OOM kills the kernel recorded);
- the evidence at the start and at the end (the first and last snapshot's diagnoses);
- each action: who requested it, who approved it, why, what exactly changed (object, field,
  before -> after, from the executor's recorded changes) and its measured effect (the
  before/after diff of the snapshots around it);
- the talking points as posted (the first diagnosis'), the participants by display name,
  follow-ups (the prevention kit's parameters) and the raw timeline for the appendix.
Rendering (Markdown, HTML) is ``bot.render.postmortem``'s.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from bot.core.diagnosis.findings import Diagnosis
from bot.core.diagnosis.history import Marker
from bot.core.model import actors
from bot.core.model.evidence import EvidenceBundle
from bot.core.model.incidents import Incident, TimelineEntry
from bot.core.remedies.field_changes import people_quantity
from bot.core.remedies.prevention import KitSource, PreventionParams
from bot.core.reporting.diffing import DiagnosisDiff, diff_diagnoses
from bot.core.reporting.outcomes import action_outcome
from bot.core.reporting.postmortem_story import (
    ActionItem,
    Detection,
    Impact,
    Point,
    StoryRow,
    action_items,
    detection_of,
    impact_of,
    story,
    went_well_and_badly,
)

BOT_ACTORS = frozenset({*actors.MACHINES, ""})
SAME_RECORD = timedelta(minutes=2)
#: verdicts that leave nothing to fix: an incident ending on one recovered
HEALTHY = frozenset({"healthy"})


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", arbitrary_types_allowed=True)


class Snapshot(_Model):
    at: datetime
    diagnosis: Diagnosis
    bundle: EvidenceBundle | None = None


class ActionInput(_Model):
    """What the store recorded about one action (``records.ActionRecord`` + votes)."""

    action_id: str
    tier: int
    requester: str
    state: str
    created_at: datetime
    updated_at: datetime
    plan: dict[str, Any] = Field(default_factory=dict)
    result: dict[str, Any] | None = None
    approvers: list[str] = Field(default_factory=list)


class FieldChange(_Model):
    """One value an action changed: ``field`` is a dotted path, e.g. ``limits.memory``."""

    field: str
    before: str
    after: str


class ObjectChange(_Model):
    kind: str
    name: str
    verb: str
    fields: list[FieldChange] = Field(default_factory=list)


class Eviction(_Model):
    pod: str
    status: str
    reason: str = ""


class ActionSummary(_Model):
    action_id: str
    tier: int
    target: str
    state: str
    requested_by: str
    requested_at: datetime
    approved_by: list[str] = Field(default_factory=list)
    reason: str
    changes: list[ObjectChange] = Field(default_factory=list)
    evictions: list[Eviction] = Field(default_factory=list)
    effect: DiagnosisDiff | None = Field(None, description="None: no snapshot after it")
    outcome: str = Field(
        "", description="what it achieved (bot.core.reporting.outcomes): applied ..."
    )
    evicted: int = 0
    to_evict: int = 0
    blocked: list[str] = Field(default_factory=list, description="evictions that did not happen")


class TimelineRow(_Model):
    at: datetime
    kind: str
    actor: str = Field(description="display name")
    text: str
    data: dict[str, Any] = Field(default_factory=dict)


class Postmortem(_Model):
    incident_id: str
    node: str
    cluster: str
    state: str
    opened_at: datetime
    ended_at: datetime = Field(description="resolved_at, or the time of the export")
    resolved: bool
    opened_by: str
    resolution_note: str = ""
    start: Snapshot | None = None
    end: Snapshot | None = None
    evicted: list[str] = Field(default_factory=list, description="by actions, then by kubelet")
    restarted: list[str] = Field(default_factory=list, description="by actions, then observed")
    oom_kills: list[str] = Field(default_factory=list, description="the kernel's, with time")
    actions: list[ActionSummary] = Field(default_factory=list)
    participants: list[str] = Field(default_factory=list)
    prevention: PreventionParams | None = None
    prevention_source: KitSource | None = Field(
        None, description="which stored evidence the kit was computed from"
    )
    timeline: list[TimelineRow] = Field(default_factory=list)
    impact: list[Impact] = Field(default_factory=list, description="per workload, user terms")
    detection: Detection | None = None
    went_well: list[Point] = Field(default_factory=list)
    went_badly: list[Point] = Field(default_factory=list)
    action_items: list[ActionItem] = Field(default_factory=list)
    story: list[StoryRow] = Field(
        default_factory=list, description="the timeline from the first symptom, as sentences"
    )

    @property
    def duration_s(self) -> float:
        return (self.ended_at - self.opened_at).total_seconds()


def _text(value: object) -> str:
    if value is None:
        return "unset"
    if isinstance(value, bool):  # as Kubernetes writes it
        return "true" if value else "false"
    return str(value)


def _flatten(value: object, prefix: str = "") -> dict[str, object]:
    if isinstance(value, Mapping):
        out: dict[str, object] = {}
        for k, v in value.items():
            out |= _flatten(v, f"{prefix}.{k}" if prefix else str(k))
        return out
    return {prefix: value}


#: recorded bookkeeping, not values a person changed
_NOISE = ("resourceVersion", "generation", "container")


def object_changes(result: Mapping[str, Any] | None) -> list[ObjectChange]:
    """Every field an applied step changed, before -> after (dry runs and no-ops skipped)."""
    out: list[ObjectChange] = []
    for c in (result or {}).get("changes") or []:
        if c.get("dry_run") or c.get("noop"):
            continue
        before, after = _flatten(c.get("before") or {}), _flatten(c.get("after") or {})
        names = [k for k in {**before, **after} if k.split(".")[-1] not in _NOISE]
        fields = [  # quantities as people write them (34944Mi reads 34.1Gi)
            FieldChange(
                field=k,
                before=people_quantity(k, before.get(k)) or "unset",
                after=people_quantity(k, after.get(k)) or "unset",
            )
            for k in names
            if before.get(k) != after.get(k)
        ]
        ns = c.get("namespace")
        out.append(
            ObjectChange(
                kind=str(c.get("kind", "")),
                name=f"{ns}/{c.get('name')}" if ns else str(c.get("name", "")),
                verb=str(c.get("verb", "")),
                fields=fields,
            )
        )
    return out


def _evictions(result: Mapping[str, Any] | None) -> list[Eviction]:
    return [
        Eviction(
            pod=f"{e.get('namespace')}/{e.get('name')}",
            status=str(e.get("status", "")),
            reason=str(e.get("reason") or ""),
        )
        for e in (result or {}).get("evictions") or []
    ]


def _around(snapshots: Sequence[Snapshot], at: datetime) -> tuple[Snapshot | None, Snapshot | None]:
    before = [s for s in snapshots if s.at <= at]
    after = [s for s in snapshots if s.at > at]
    return (before[-1] if before else None, after[0] if after else None)


def _name(names: Mapping[str, str], who: str) -> str:
    return names.get(who) or who


def summarize_action(
    a: ActionInput, snapshots: Sequence[Snapshot], names: Mapping[str, str]
) -> ActionSummary:
    before, after = _around(snapshots, a.updated_at)
    done = action_outcome(a.state, a.result)
    ran = a.state in ("succeeded", "failed", "undone") and a.result is not None
    effect = (
        diff_diagnoses(before.diagnosis, after.diagnosis)
        if ran and before is not None and after is not None
        else None
    )
    return ActionSummary(
        action_id=a.action_id,
        tier=a.tier,
        target=str(a.plan.get("target", "")),
        state=a.state,
        requested_by=_name(names, a.requester),
        requested_at=a.created_at,
        approved_by=[_name(names, u) for u in a.approvers],
        reason=str(a.plan.get("reason", "")),
        changes=object_changes(a.result),
        evictions=_evictions(a.result),
        effect=effect,
        outcome=done.outcome,
        evicted=done.evicted,
        to_evict=done.to_evict,
        blocked=done.blocked,
    )


def build_postmortem(
    incident: Incident,
    entries: Sequence[TimelineEntry],
    *,
    snapshots: Sequence[Snapshot],
    actions: Sequence[ActionInput],
    names: Mapping[str, str],
    cluster: str,
    now: datetime,
    prevention: PreventionParams | None = None,
    prevention_source: KitSource | None = None,
) -> Postmortem:
    """The postmortem draft (see the module docstring). ``names``: user id -> display name."""
    snaps = sorted(snapshots, key=lambda s: s.at)
    ordered = sorted(entries, key=lambda e: (e.at, e.seq or 0))
    summaries = [summarize_action(a, snaps, names) for a in sorted(actions, key=_created)]
    evicted = [
        f"{e.pod} (tier {s.tier}, gpunode)"
        for s in summaries
        for e in s.evictions
        if e.status == "evicted"
    ]
    restarted = [
        f"{p} (tier {a.tier}, gpunode)"
        for a in actions
        if a.state == "succeeded"
        for p in a.plan.get("restarts") or []
    ]
    evicted_pods = [e.pod for s in summaries for e in s.evictions if e.status == "evicted"]
    restarted_pods = [
        str(p) for a in actions if a.state == "succeeded" for p in a.plan.get("restarts") or []
    ]
    # every snapshot re-reads the kernel log: the same record comes back, its wall time
    # re-derived from uptime (it can shift by a minute); keep the first sighting
    marks: list[Marker] = []
    for s in snaps:
        for m in s.diagnosis.history.markers if s.diagnosis.history is not None else []:
            if m.kind in ("oom_kill", "eviction", "restart") and not any(
                k.kind == m.kind and k.label == m.label and abs(k.at - m.at) <= SAME_RECORD
                for k in marks
            ):
                marks.append(m)
    marks.sort(key=lambda m: m.at)
    for m in marks:
        when = f"{m.at:%Y-%m-%d %H:%M} UTC"
        if m.kind == "eviction":
            evicted.append(f"{m.subject} ({m.label}, {when})")
        elif m.kind == "restart":
            restarted.append(f"{m.subject} ({m.label}, {when})")
    kills = [
        f"{m.label} ({m.subject}) at {m.at:%Y-%m-%d %H:%M} UTC"
        for m in marks
        if m.kind == "oom_kill"
    ]
    people = [incident.opened_by, *(e.actor for e in ordered)]
    people += [a.requester for a in actions] + [u for a in actions for u in a.approvers]
    participants = list(dict.fromkeys(_name(names, p) for p in people if p not in BOT_ACTORS))
    detection = detection_of(
        marks,
        opened_at=incident.opened_at,
        opened_by=_name(names, incident.opened_by),
        raw_opener=incident.opened_by,
    )
    end_snap = snaps[-1] if snaps else None
    well, badly = went_well_and_badly(
        detection=detection,
        actions=summaries,
        end_cause=end_snap.diagnosis.verdict.cause if end_snap is not None else None,
        healthy_causes=HEALTHY,
    )
    outcomes = {
        s.action_id: {
            "tier": s.tier,
            "outcome": s.outcome,
            "evicted": s.evicted,
            "to_evict": s.to_evict,
        }
        for s in summaries
    }
    return Postmortem(
        impact=impact_of(
            marks,
            evicted_by_actions=evicted_pods,
            restarted_by_actions=restarted_pods,
            cgroup_kills=_cgroup_kills(snaps),
        ),
        detection=detection,
        went_well=well,
        went_badly=badly,
        action_items=action_items(prevention, summaries),
        story=story(marks, ordered, names=names, outcomes=outcomes),
        incident_id=incident.id,
        node=incident.node,
        cluster=cluster,
        state=incident.state,
        opened_at=incident.opened_at,
        ended_at=incident.resolved_at or now,
        resolved=incident.resolved_at is not None,
        opened_by=_name(names, incident.opened_by),
        resolution_note=incident.resolution_note,
        start=snaps[0] if snaps else None,
        end=snaps[-1] if len(snaps) > 1 else None,
        evicted=evicted,
        restarted=restarted,
        oom_kills=kills,
        actions=summaries,
        participants=participants,
        prevention=prevention,
        prevention_source=prevention_source,
        timeline=[
            TimelineRow(
                at=e.at, kind=e.kind, actor=_name(names, e.actor), text=e.text, data=dict(e.data)
            )
            for e in ordered
        ],
    )


def _cgroup_kills(snaps: Sequence[Snapshot]) -> dict[str, int]:
    """Pod -> the most OOM kills any snapshot's CONTAINER_OOM_KILLED findings counted (its
    containers summed)."""
    out: dict[str, int] = {}
    for s in snaps:
        per_pod: dict[str, int] = {}
        for f in s.diagnosis.findings:
            if f.code == "CONTAINER_OOM_KILLED":
                kills = f.params.get("oom_kills", 0)
                pod = str(f.params.get("pod", f.subject))
                per_pod[pod] = per_pod.get(pod, 0) + (kills if isinstance(kills, int) else 0)
        for pod, kills in per_pod.items():
            out[pod] = max(out.get(pod, 0), kills)
    return out


def _created(a: ActionInput) -> datetime:
    return a.created_at
