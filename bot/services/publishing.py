"""The Home tab's contents for one person, and pushing it to the people an approval is for.

``gather``: what one person's Home shows (open incidents with their latest verdict, the
approvals they may decide, the newest diagnoses; ``bot.services.home`` asks it when the tab
is opened). ``push_homes``: when an approval is requested or closed, the Home of every person
who may decide it (a role that approves the tier in the incident's cluster, never the
requester) is published again through the ``ThreadPort`` (``show_home``: the presenter words
it in their language and publishes it), so a pending approval shows without reopening the
tab, and a decided one leaves it. Best effort, in the background: a Home that cannot be
gathered or published is logged; the approval flow does not wait for it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

from bot.core.governance.approvals import ApprovalRequest
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
from bot.errors import GpunodeError
from bot.services.acting import ActDeps
from bot.services.action_records import tier_of
from bot.services.clusters import incident_at
from bot.services.ports import StorePort

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class HomeSources:
    """What a Home is read from: the store, the clock, whether several clusters are served
    (nodes are then named ``cluster/node``) and the action deps (None: actions are off, so
    nobody has approvals to decide)."""

    store: StorePort
    clock: Callable[[], datetime]
    multi: bool
    act: ActDeps | None


def _node(src: HomeSources, incident: Incident) -> str:
    return format_node_ref(incident.cluster, incident.node, show_cluster=src.multi)


async def gather(src: HomeSources, user: str) -> HomeSummary:
    """``user``'s Home as it is now."""
    open_now = list(reversed(await src.store.open_incidents()))  # newest first
    shown, more_incidents = bounded(open_now, MAX_INCIDENTS)
    incidents = []
    for i in shown:
        snap = await src.store.latest_snapshot(i.id)
        incidents.append(
            HomeIncident(
                incident_id=i.id,
                node=_node(src, i),
                state=i.state,
                opened_at=i.opened_at,
                channel=i.channel,
                cause=snap.diagnosis.verdict.cause if snap is not None else None,
            )
        )
    approvals, more_approvals = await _approvals_for(src, user)
    diagnoses = []
    for i in await src.store.recent_incidents(MAX_DIAGNOSES):
        snap = await src.store.latest_snapshot(i.id)
        if snap is None:
            continue
        diagnoses.append(
            HomeDiagnosis(
                incident_id=i.id,
                node=_node(src, i),
                at=snap.at,
                cause=snap.diagnosis.verdict.cause,
                state=i.state,
            )
        )
    return HomeSummary(
        user=user,
        at=src.clock(),
        incidents=tuple(incidents),
        more_incidents=more_incidents,
        approvals=approvals,
        more_approvals=more_approvals,
        diagnoses=tuple(diagnoses),
        can_approve=src.act is not None,
    )


async def may_decide(d: ActDeps, user: str, tier: int, incident: Incident) -> bool:
    """``user`` holds a role that approves ``tier`` in the incident's cluster."""
    at = incident_at(d.clusters, incident)
    principal = await d.for_cluster(at.cluster).principal(user, incident.channel)
    return can_approve(principal, tier_of(tier), d.policy)


async def _approvals_for(src: HomeSources, user: str) -> tuple[tuple[HomeApproval, ...], int]:
    """The pending approvals ``user`` may decide, oldest first (bounded)."""
    d = src.act
    if d is None:
        return (), 0
    now = src.clock()
    mine: list[HomeApproval] = []
    for req in await src.store.pending_approvals():
        if req.expires_at <= now or req.requester == user or user in req.approvers:
            continue
        record = await src.store.get_action(req.action_id)
        if record is None or record.incident_id is None:
            continue
        incident = await src.store.get_incident(record.incident_id)
        if incident is None or not await may_decide(d, user, record.tier, incident):
            continue
        mine.append(
            HomeApproval(
                approval_id=req.id,
                incident_id=incident.id,
                node=_node(src, incident),
                tier=record.tier,
                requester=req.requester,
                expires_at=req.expires_at,
                remaining=req.remaining,
                channel=incident.channel,
            )
        )
    return bounded(mine, MAX_APPROVALS)


async def deciders(d: ActDeps, req: ApprovalRequest, incident: Incident) -> list[str]:
    """Everyone the policy binds (users, and the members of its user groups) who may decide
    ``req`` in the incident's cluster, the requester never."""
    users = {u for b in d.policy.bindings.values() for u in b.users}
    for group in sorted({g for b in d.policy.bindings.values() for g in b.usergroups}):
        try:
            users |= set(await d.ports.chat.usergroup_members(group))
        except GpunodeError as err:
            log.warning("user group %s not resolved for the Home tabs: %s", group, err.code)
    out = []
    for user in sorted(users - {req.requester}):
        if await may_decide(d, user, req.tier, incident):
            out.append(user)
    return out


async def _push(d: ActDeps, req: ApprovalRequest, incident: Incident) -> None:
    src = HomeSources(
        store=d.ports.store,
        clock=d.config.clock,
        multi=d.clusters.multi,
        act=d,
    )
    try:
        users = await deciders(d, req, incident)
    except GpunodeError as err:
        log.warning("the Home tabs for approval %s were not pushed: %s", req.id, err.code)
        return
    for user in users:
        try:
            await d.ports.thread.show_home(user, await gather(src, user))
        except GpunodeError as err:
            log.warning("the Home tab of %s was not pushed: %s", user, err.code)


def push_homes(d: ActDeps, req: ApprovalRequest, incident: Incident | None) -> None:
    """Publish again, in the background, the Home of everyone who may decide ``req``."""
    if incident is not None:
        d.bg.spawn(_push(d, req, incident), name="home-push")
