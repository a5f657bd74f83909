"""The timeline export: the incident's postmortem draft, as Markdown and self-contained HTML.

``export_postmortem`` reads the incident's record (timeline, snapshots, actions with their
approvals) from the store, asks the chat port for the participants' display names
(``users.info``), draws the start and end charts, builds ``bot.core.postmortem.Postmortem``
and renders it. ``upload_postmortem`` shares the files into the incident thread: the two
charts (the Markdown links them by name), the Markdown and the HTML.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime

from bot.core.charts import action_markers, chart_spec
from bot.core.cluster import ClusterView
from bot.core.incidents import Incident, TimelineEntry
from bot.core.postmortem import BOT_ACTORS, ActionInput, Postmortem, Snapshot, build_postmortem
from bot.core.prevention import KitSource, prevention_params
from bot.core.records import EvidenceSnapshot
from bot.render.postmortem import render_postmortem_html, render_postmortem_markdown
from bot.services.ports import ChatPort, StorePort

UserName = Callable[[str], Awaitable[str]]


@dataclass(frozen=True)
class ExportFiles:
    postmortem: Postmortem
    markdown: str
    html: str
    charts: dict[str, bytes]  # "start"/"end" -> PNG
    chart_names: dict[str, str]  # "start"/"end" -> file name


def _snapshot(row: EvidenceSnapshot) -> tuple[Snapshot, ClusterView | None]:
    return Snapshot(at=row.at, diagnosis=row.diagnosis, bundle=row.bundle), row.view


async def _names(user_name: UserName, ids: set[str]) -> dict[str, str]:
    wanted = sorted(i for i in ids if i not in BOT_ACTORS)
    found = await asyncio.gather(*(user_name(i) for i in wanted))
    return dict(zip(wanted, found, strict=True))


def _charts(pm: Postmortem, entries: list[TimelineEntry]) -> dict[str, bytes]:
    from bot.charts import render_png

    out: dict[str, bytes] = {}
    if pm.start is not None:
        out["start"] = render_png(
            chart_spec(pm.start.diagnosis, pm.start.bundle, title=f"{pm.node}: at the start")
        )
    if pm.end is not None:
        marks = action_markers(entries, node=pm.node)
        earlier = [(pm.start.diagnosis, pm.start.bundle)] if pm.start is not None else []
        out["end"] = render_png(
            chart_spec(
                pm.end.diagnosis,
                pm.end.bundle,
                actions=marks,
                earlier=earlier,
                title=f"{pm.node}: at the end, actions marked",
            )
        )
    return out


async def export_postmortem(
    store: StorePort,
    user_name: UserName,
    incident: Incident,
    *,
    cluster: str,
    now: datetime,
    charts: bool = True,
    locale: str = "en",
) -> ExportFiles:
    """The postmortem draft of ``incident`` (see the module docstring). ``user_name``: the
    chat port's ``user_name`` (display names); ``charts=False``: none drawn (a terminal);
    ``locale``: its language (the thread's, or the CLI's ``--lang``)."""
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
    pngs = await asyncio.to_thread(_charts, pm, entries) if charts else {}
    chart_names = {k: f"{incident.id}-postmortem-{k}.png" for k in pngs}
    return ExportFiles(
        postmortem=pm,
        markdown=render_postmortem_markdown(pm, charts=chart_names, locale=locale),
        html=render_postmortem_html(pm, charts=pngs, locale=locale),
        charts=pngs,
        chart_names=chart_names,
    )


async def upload_postmortem(chat: ChatPort, incident: Incident, files: ExportFiles) -> list[str]:
    """The charts, the Markdown and the HTML into the incident's thread; their file names."""
    names: list[str] = []
    for key, png in files.charts.items():
        name = files.chart_names[key]
        await chat.upload(
            incident.channel,
            incident.thread_ts,
            filename=name,
            title=f"{incident.id} postmortem chart ({key})",
            content=png,
            alt_txt=f"{incident.node} memory at the {key} of {incident.id}",
        )
        names.append(name)
    for ext, content, what in (("md", files.markdown, "Markdown"), ("html", files.html, "HTML")):
        name = f"{incident.id}-postmortem.{ext}"
        await chat.upload(
            incident.channel,
            incident.thread_ts,
            filename=name,
            title=f"{incident.id} postmortem draft ({what})",
            content=content,
        )
        names.append(name)
    return names
