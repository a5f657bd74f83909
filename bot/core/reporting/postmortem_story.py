"""The narrative parts of the postmortem, as data (pure): what an incident commander reads
before the evidence.

- **impact** in user terms: per workload, how often the kernel killed it, whether it was
  evicted or restarted (by gpunode or the kubelet);
- **detection**: the first symptom in the evidence (the first OOM kill or eviction), when
  and by whom (an alert or a person) the incident was opened, and the gap between them;
- **response**: each action with what it achieved (``bot.core.reporting.outcomes``), time to the
  first action, the verdict and free memory at the end;
- **went well / went badly**: facts with codes (the templates word them);
- **action items** with an owner to fill: the prevention kit's follow-ups, plus a review of
  each PodDisruptionBudget that blocked an eviction;
- **the story**: the timeline from the first symptom, each row a sentence's code and its
  values (no event types or JSON reach the reader).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from bot.core.diagnosis.history import Marker
from bot.core.model import actors
from bot.core.model.incidents import TimelineEntry
from bot.core.remedies.prevention import PreventionParams

#: a gap between the first symptom and the incident longer than this is "detected late"
LATE_DETECTION = timedelta(minutes=10)
#: the symptoms a timeline starts at (restarts follow a kill; they are not the first sign)
SYMPTOMS = ("oom_kill", "eviction")


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Impact(_Model):
    """One workload (pod) the incident touched."""

    pod: str
    oom_kills: int = 0
    evicted_by: list[str] = Field(default_factory=list, description="gpunode, kubelet")
    restarted_by: list[str] = Field(default_factory=list, description="gpunode, kubelet")


class Detection(_Model):
    first_symptom_at: datetime | None = None
    first_symptom: str = Field("", description="in English: 'OOM kill python (ns/pod)'")
    first_symptom_kind: str = ""
    first_symptom_label: str = Field("", description="its marker's ``label`` (English)")
    first_symptom_params: dict[str, Any] = Field(
        default_factory=dict, description="its marker's ``params`` (what a presenter words)"
    )
    first_symptom_subject: str = Field("", description="the pod or node it is about")
    opened_at: datetime
    opened_by: str = Field(description="display name, or 'alertmanager'")
    by_alert: bool = False

    @property
    def gap_s(self) -> float | None:
        if self.first_symptom_at is None:
            return None
        return max(0.0, (self.opened_at - self.first_symptom_at).total_seconds())


class Point(_Model):
    """A fact for "went well" / "went badly": a code the templates word, and its values."""

    code: str
    params: dict[str, Any] = Field(default_factory=dict)


class ActionItem(_Model):
    code: str = Field(
        description="quota, limit_range, kubelet, alerts, descheduler, pdb, rediagnose"
    )
    params: dict[str, Any] = Field(default_factory=dict)
    owner: str = Field("", description="to fill in: who does it")
    source: str = Field("prevention kit", description="where the item comes from")


class StoryRow(_Model):
    """One sentence of the timeline: ``code`` picks the sentence, ``values`` fill it."""

    at: datetime
    code: str
    who: str = ""
    values: dict[str, Any] = Field(default_factory=dict)


def impact_of(
    marks: Sequence[Marker],
    *,
    evicted_by_actions: Sequence[str],
    restarted_by_actions: Sequence[str],
    cgroup_kills: Mapping[str, int] | None = None,
) -> list[Impact]:
    """Per pod: the kernel's kills, evictions and restarts. A pod's kills are the larger of
    the kernel log's records (each once) and its cgroup's ``oom_kill`` counter
    (``cgroup_kills``, from the findings): the log keeps a window, the counter every kill,
    and the postmortem must not count fewer kills than the findings beside it."""
    rows: dict[str, dict[str, Any]] = {}

    def row(pod: str) -> dict[str, Any]:
        return rows.setdefault(
            pod, {"pod": pod, "oom_kills": 0, "evicted_by": [], "restarted_by": []}
        )

    for m in marks:
        if m.kind == "oom_kill":
            row(m.subject)["oom_kills"] += 1
        elif m.kind == "eviction":
            row(m.subject)["evicted_by"].append("kubelet")
        elif m.kind == "restart":
            row(m.subject)["restarted_by"].append("kubelet")
    for pod, kills in (cgroup_kills or {}).items():
        r = row(pod)
        r["oom_kills"] = max(r["oom_kills"], kills)
    for pod in evicted_by_actions:
        row(pod)["evicted_by"].append(actors.GPUNODE)
    for pod in restarted_by_actions:
        row(pod)["restarted_by"].append(actors.GPUNODE)
    return [Impact.model_validate(r) for r in rows.values()]


def detection_of(
    marks: Sequence[Marker], *, opened_at: datetime, opened_by: str, raw_opener: str
) -> Detection:
    first = next((m for m in sorted(marks, key=lambda m: m.at) if m.kind in SYMPTOMS), None)
    return Detection(
        first_symptom_at=first.at if first else None,
        first_symptom=f"{first.label} ({first.subject})" if first else "",
        first_symptom_kind=first.kind if first else "",
        first_symptom_label=first.label if first else "",
        first_symptom_params=dict(first.params) if first else {},
        first_symptom_subject=first.subject if first else "",
        opened_at=opened_at,
        opened_by=opened_by,
        by_alert=raw_opener == actors.ALERTMANAGER,
    )


def went_well_and_badly(
    *,
    detection: Detection,
    actions: Sequence[Any],
    end_cause: str | None,
    healthy_causes: frozenset[str],
) -> tuple[list[Point], list[Point]]:
    """``actions``: ``ActionSummary`` rows (outcome, tier, effect)."""
    well: list[Point] = []
    badly: list[Point] = []
    if detection.by_alert:
        well.append(Point(code="alert_opened"))
    gap = detection.gap_s
    if gap is not None and gap > LATE_DETECTION.total_seconds():
        badly.append(
            Point(
                code="late_detection",
                params={
                    "gap_s": gap,
                    "what": detection.first_symptom,
                    "kind": detection.first_symptom_kind,
                    "label": detection.first_symptom_label,
                    "marker": detection.first_symptom_params,
                    "subject": detection.first_symptom_subject,
                },
            )
        )
    elif gap is not None:
        well.append(Point(code="early_detection", params={"gap_s": gap}))
    for a in actions:
        effect = a.effect
        freed = (
            effect.available_after_bytes - effect.available_before_bytes
            if effect is not None
            and effect.available_before_bytes is not None
            and effect.available_after_bytes is not None
            else None
        )
        if a.outcome == "applied" and freed is not None and freed > 0:
            well.append(Point(code="action_freed", params={"tier": a.tier, "bytes": freed}))
        elif a.outcome in ("not_applied", "partly"):
            badly.append(
                Point(
                    code="action_" + a.outcome, params={"tier": a.tier, "blocked": list(a.blocked)}
                )
            )
        elif a.outcome == "failed":
            badly.append(Point(code="action_failed", params={"tier": a.tier}))
        if a.approved_by:
            well.append(Point(code="approved", params={"tier": a.tier, "by": list(a.approved_by)}))
    if end_cause is not None and end_cause not in healthy_causes:
        badly.append(Point(code="still_unhealthy", params={"cause": end_cause}))
    if not actions:
        badly.append(Point(code="no_action"))
    return well, badly


def action_items(prevention: PreventionParams | None, actions: Sequence[Any]) -> list[ActionItem]:
    """The prevention kit's follow-ups, then each PodDisruptionBudget that blocked an eviction."""
    items: list[ActionItem] = []
    if prevention is None:
        items.append(ActionItem(code="rediagnose", source="gpunode"))
    else:
        p = prevention
        for q in p.namespaces:
            items.append(
                ActionItem(
                    code="quota",
                    params={
                        "namespace": q.namespace,
                        "gpu": q.quota_gpu,
                        "requests": q.quota_memory_requests,
                        "limits": q.quota_memory_limits,
                    },
                )
            )
        lr = p.limit_range
        items.append(
            ActionItem(
                code="limit_range",
                params={"request": lr.default_request_memory, "limit": lr.default_limit_memory},
            )
        )
        k = p.kubelet
        items.append(
            ActionItem(
                code="kubelet",
                params={
                    "kube_reserved": k.kube_reserved_memory,
                    "system_reserved": k.system_reserved_memory,
                    "hard": k.eviction_hard_memory,
                    "soft": k.eviction_soft_memory,
                    "grace": k.eviction_soft_grace,
                },
            )
        )
        items.append(
            ActionItem(
                code="alerts",
                params={
                    "slab_percent": round(p.slab_alert_ratio * 100),
                    "available_percent": round(p.available_alert_ratio * 100),
                },
            )
        )
        items.append(ActionItem(code="descheduler"))
    seen: set[str] = set()
    for a in actions:
        for b in a.blocked:
            if b not in seen:
                seen.add(b)
                items.append(
                    ActionItem(
                        code="pdb", params={"blocked": b, "tier": a.tier}, source="an action"
                    )
                )
    return items


def story(
    marks: Sequence[Marker],
    entries: Sequence[TimelineEntry],
    *,
    names: Mapping[str, str],
    outcomes: Mapping[str, Mapping[str, Any]],
) -> list[StoryRow]:
    """The timeline from the first symptom on, one sentence per row. ``outcomes``: action id
    -> its ``tier``, ``outcome``, ``evicted`` and ``to_evict`` for the action rows; ``names``:
    user id -> display name."""
    first = next((m.at for m in sorted(marks, key=lambda m: m.at) if m.kind in SYMPTOMS), None)
    rows: list[StoryRow] = []
    for m in marks:
        if first is not None and m.at < first:
            continue
        rows.append(
            StoryRow(
                at=m.at,
                code=f"symptom_{m.kind}",
                values={"pod": m.subject, "what": m.label, "params": dict(m.params)},
            )
        )
    for e in entries:
        who = names.get(e.actor) or e.actor
        values: dict[str, Any] = {"text": e.text, "said": e.said}
        code: str = e.kind
        ran = outcomes.get(str(e.data.get("action_id", "")))
        if e.kind == "action_result" and ran is not None and not e.text.startswith("watched"):
            values |= dict(ran)
        elif e.kind == "action_result":
            code = "action_note"
        if e.kind == "status":
            values |= {"from": e.data.get("from", ""), "to": e.data.get("to", "")}
        if e.kind == "evidence":
            values["text"] = e.text.removeprefix("verdict: ")
            if isinstance(e.data.get("verdict"), dict):  # worded in the reader's language
                values["verdict"] = e.data["verdict"]
        if e.kind == "action_requested":
            values["text"] = e.text.split(": ", 1)[-1]
            values["tier"] = ran["tier"] if ran is not None else None
        rows.append(StoryRow(at=e.at, code=code, who=who, values=values))
    return sorted(rows, key=lambda r: r.at)
