"""The Home tab's use case: what one person sees when they open gpunode's Home (issue #23
§1). Open incidents with their latest verdict, the approvals that person may decide (their
role in the incident's cluster, never their own request, never one they already approved),
and the newest diagnoses, open or resolved. Each list is bounded (``bot.core.reporting.home``); the
presenter words it in the person's language (``bot.render.home`` via ``bot.slack.home``).
"""

from __future__ import annotations

import logging

from bot.core.governance.policy import can_approve
from bot.core.model.clusters import format_node_ref
from bot.core.model.incidents import Incident
from bot.core.reporting.home import (
    MAX_APPROVALS,
    MAX_DIAGNOSES,
    MAX_INCIDENTS,
    HomeApproval,
    HomeDiagnosis,
    HomeIncident,
    HomeSummary,
    bounded,
)
from bot.services.acting import tier_of
from bot.services.chatops import BotServices
from bot.services.clusters import incident_at

log = logging.getLogger(__name__)


def _node(s: BotServices, incident: Incident) -> str:
    return format_node_ref(incident.cluster, incident.node, show_cluster=s.clusters.multi)


async def _cause(s: BotServices, incident_id: str) -> str | None:
    """The verdict cause of the incident's latest diagnosis (None: not diagnosed yet)."""
    snap = await s.store.latest_snapshot(incident_id)
    return snap.diagnosis.verdict.cause if snap is not None else None


async def home_summary(s: BotServices, user: str) -> HomeSummary:
    now = s.clock()
    open_now = list(reversed(await s.store.open_incidents()))  # newest first
    shown, more_incidents = bounded(open_now, MAX_INCIDENTS)
    incidents = []
    for i in shown:
        cause = await _cause(s, i.id)
        incidents.append(
            HomeIncident(
                incident_id=i.id,
                node=_node(s, i),
                state=i.state,
                opened_at=i.opened_at,
                channel=i.channel,
                cause=cause,
            )
        )
    approvals, more_approvals = await _my_approvals(s, user)
    diagnoses = []
    for i in await s.store.recent_incidents(MAX_DIAGNOSES):
        snap = await s.store.latest_snapshot(i.id)
        if snap is None:
            continue
        diagnoses.append(
            HomeDiagnosis(
                incident_id=i.id,
                node=_node(s, i),
                at=snap.at,
                cause=snap.diagnosis.verdict.cause,
                state=i.state,
            )
        )
    return HomeSummary(
        user=user,
        at=now,
        incidents=tuple(incidents),
        more_incidents=more_incidents,
        approvals=approvals,
        more_approvals=more_approvals,
        diagnoses=tuple(diagnoses),
        can_approve=s.act is not None,
    )


async def _my_approvals(s: BotServices, user: str) -> tuple[tuple[HomeApproval, ...], int]:
    """The pending approvals ``user`` may decide, oldest first (bounded)."""
    if s.act is None:
        return (), 0
    now = s.clock()
    mine: list[HomeApproval] = []
    for req in await s.store.pending_approvals():
        if req.expires_at <= now or req.requester == user or user in req.approvers:
            continue
        record = await s.store.get_action(req.action_id)
        if record is None or record.incident_id is None:
            continue
        incident = await s.store.get_incident(record.incident_id)
        if incident is None:
            continue
        principal = await s.act.principal(
            user, incident.channel, cluster=incident_at(s.clusters, incident).cluster
        )
        if not can_approve(principal, tier_of(record.tier), s.act.deps.policy):
            continue
        mine.append(
            HomeApproval(
                approval_id=req.id,
                incident_id=incident.id,
                node=_node(s, incident),
                tier=record.tier,
                requester=req.requester,
                expires_at=req.expires_at,
                remaining=req.remaining,
                channel=incident.channel,
            )
        )
    return bounded(mine, MAX_APPROVALS)
