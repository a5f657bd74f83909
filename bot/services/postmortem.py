"""The timeline export: the incident's postmortem draft, as data.

``draft_postmortem`` reads the incident's record (timeline, snapshots, actions with their
approvals) from the store, asks the chat port for the participants' display names
(``users.info``), and builds ``bot.core.reporting.postmortem.Postmortem`` with the specs of its
start and end charts (``bot.core.reporting.charts``). It words and draws nothing: the Slack
presenter (``FilesPort.postmortem``) draws the charts and renders the Markdown and the HTML in the
thread's language and shares them; the terminal (``gpunode timeline``) prints the Markdown
in the reader's.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from datetime import datetime

from bot.core.model.cluster import ClusterView
from bot.core.model.incidents import Incident, TimelineEntry
from bot.core.remedies.prevention import KitSource, prevention_params
from bot.core.reporting.charts import ChartSpec, action_markers, chart_spec
from bot.core.reporting.postmortem import (
    BOT_ACTORS,
    ActionInput,
    Postmortem,
    Snapshot,
    build_postmortem,
)
from bot.core.reporting.records import EvidenceSnapshot
from bot.services.ports import StorePort

UserName = Callable[[str], Awaitable[str]]


@dataclass(frozen=True)
class PostmortemDraft:
    postmortem: Postmortem
    charts: dict[str, ChartSpec]  # "start"/"end" -> what to draw (none without snapshots)


def _snapshot(row: EvidenceSnapshot) -> tuple[Snapshot, ClusterView | None]:
    return Snapshot(at=row.at, diagnosis=row.diagnosis, bundle=row.bundle), row.view


async def _names(user_name: UserName, ids: set[str]) -> dict[str, str]:
    wanted = sorted(i for i in ids if i not in BOT_ACTORS)
    found = await asyncio.gather(*(user_name(i) for i in wanted))
    return dict(zip(wanted, found, strict=True))


def _charts(pm: Postmortem, entries: Sequence[TimelineEntry]) -> dict[str, ChartSpec]:
    out: dict[str, ChartSpec] = {}
    if pm.start is not None:
        out["start"] = chart_spec(
            pm.start.diagnosis, pm.start.bundle, title=f"{pm.node}: at the start"
        )
    if pm.end is not None:
        marks = action_markers(entries, node=pm.node)
        earlier = [(pm.start.diagnosis, pm.start.bundle)] if pm.start is not None else []
        out["end"] = chart_spec(
            pm.end.diagnosis,
            pm.end.bundle,
            actions=marks,
            earlier=earlier,
            title=f"{pm.node}: at the end, actions marked",
        )
    return out


async def draft_postmortem(
    store: StorePort, user_name: UserName, incident: Incident, *, cluster: str, now: datetime
) -> PostmortemDraft:
    """The postmortem draft of ``incident`` (see the module docstring). ``user_name``: the
    chat port's ``user_name`` (display names)."""
    entries = list(await store.timeline(incident.id))
    rows = [_snapshot(r) for r in await store.snapshots(incident.id)]
    actions: list[ActionInput] = []
    for record in await store.actions_for_incident(incident.id):
        approval = await store.approval_for_action(record.action_id)
        actions.append(
            ActionInput(
                action_id=record.action_id,
                tier=record.tier,
                requester=record.requester,
                state=record.state,
                created_at=record.created_at,
                updated_at=record.updated_at,
                plan=dict(record.plan),
                result=record.result,
                approvers=list(approval.approvers) if approval is not None else [],
            )
        )
    ids = {incident.opened_by, *(e.actor for e in entries)}
    ids |= {a.requester for a in actions} | {u for a in actions for u in a.approvers}
    names = await _names(user_name, ids)
    views = [(s.at, v) for s, v in rows if v is not None]
    # the kit from the latest stored cluster view, labelled with it (bot.services.prevention)
    source = KitSource(kind="snapshot", at=views[-1][0], incident=incident.id) if views else None
    pm = build_postmortem(
        incident,
        entries,
        snapshots=[s for s, _ in rows],
        actions=actions,
        names=names,
        cluster=cluster,
        now=now,
        prevention=prevention_params(views[-1][1]) if views else None,
        prevention_source=source,
    )
    return PostmortemDraft(postmortem=pm, charts=_charts(pm, entries))
