"""Step 4 of an action: the approvers' votes on the request Apply posted (``applying``).

Votes go through ``store.update_approval``: read, apply the
pure ``approvals.approve``/``deny``, write, in one transaction, so simultaneous votes on
several replicas are all counted and exactly one of them sees ``approved``.

Once decided (approved, denied, expired), the approval message is edited to its outcome
without buttons; its channel and ts are kept in the action's result (``note_action``).
``expire_overdue`` ends requests nobody answered in time (call it periodically).
"""

from __future__ import annotations

import logging
from typing import Any, Literal

from bot.core.governance.approvals import ApprovalRequest, approve, deny, expire_if_due
from bot.core.governance.policy import can_approve
from bot.core.model import actors
from bot.core.model.incidents import Incident, said
from bot.core.reporting.outcomes import ApprovalClosed, refused
from bot.core.reporting.records import ActionRecord
from bot.errors import GpunodeError
from bot.services import publishing
from bot.services.acting import ActDeps
from bot.services.action_records import (
    audit_fields,
    incident_of,
    plan_of_record,
    reason_of,
    tier_of,
)
from bot.services.applying import APPROVAL_MESSAGE, execute

log = logging.getLogger(__name__)

VOTE_DECISION = {
    "approved": "approved",
    "counted": "approval_counted",
    "denied": "approval_denied",
    "self_approval_rejected": "self_approval_rejected",
    "not_eligible": "not_eligible",
    "expired": "expired",
    "already_final": "ignored",
    "already_counted": "ignored",
}


async def vote(d: ActDeps, *, approval_id: str, user: str, channel: str, yes: bool) -> None:
    """An approver's Approve or Deny (the requester may Deny to withdraw)."""
    req = await d.ports.store.get_approval(approval_id)
    record = await d.ports.store.get_action(req.action_id) if req else None
    if req is None or record is None:
        await d.messages.refuse(
            channel,
            user,
            refused("approval_unknown"),
            audit={
                "action": "approve" if yes else "deny",
                "detail": approval_id,
                "detail_params": {"approval": approval_id},
            },
        )
        return
    principal = await d.principal(user, channel)
    eligible = can_approve(principal, tier_of(record.tier), d.policy)
    now = d.config.clock()

    def change(r: ApprovalRequest) -> tuple[ApprovalRequest, str]:
        if yes:
            return approve(r, user, now, eligible=eligible)
        return deny(r, user, now, eligible=eligible)

    new, outcome = await d.ports.store.update_approval(approval_id, change)
    fields = audit_fields(record, channel, "approve" if yes else "deny")
    await d.journal.audit(actor=user, **fields, decision=VOTE_DECISION[outcome])
    incident = await incident_of(d.ports.store, record)  # once per vote
    thread_ts = incident.thread_ts if incident else None
    if outcome in ("self_approval_rejected", "not_eligible", "already_final", "already_counted"):
        await d.messages.refuse(channel, user, refused(f"vote_{outcome}"), thread_ts=thread_ts)
        return
    if outcome == "expired":
        await d.messages.refuse(channel, user, refused("vote_expired"), thread_ts=thread_ts)
        await close_approval_message(d, record, new, state="expired", by="", incident=incident)
        await _end(d, record, "expired", by=user, why="approval expired", incident=incident)
        return
    if outcome == "counted":
        await d.messages.say(channel, user, "vote_counted", remaining=new.remaining)
        await d.journal.timeline(
            record.incident_id,
            "approval",
            user,
            "approved (more needed)",
            said("approved_more_needed"),
        )
        return
    if outcome == "denied":
        await d.journal.timeline(record.incident_id, "approval", user, "denied", said("denied"))
        await close_approval_message(d, record, new, state="denied", by=user, incident=incident)
        await _end(d, record, "denied", by=user, why=f"denied by {user}", incident=incident)
        return
    await close_approval_message(d, record, new, state="approved", by=user, incident=incident)
    await _approved(d, record, new, by=user, channel=channel, incident=incident)


async def close_approval_message(
    d: ActDeps,
    record: ActionRecord,
    req: ApprovalRequest,
    *,
    state: Literal["approved", "denied", "expired"],
    by: str,
    incident: Incident | None,
) -> None:
    """Edit the approval message to its outcome, without buttons (best effort: the state
    and the audit row are already written; a lost edit leaves buttons that answer
    "already decided")."""
    where: Any = (record.result or {}).get(APPROVAL_MESSAGE)
    if not isinstance(where, dict) or not where.get("ts"):
        return
    told = ApprovalClosed(
        plan=plan_of_record(record),
        request=req,
        state=state,
        by=by,
        reason=reason_of(record),
    )
    try:
        await d.ports.thread.update(
            str(where["channel"]), str(where["ts"]), told, incident=incident
        )
    except GpunodeError as err:
        log.warning("could not close approval message of %s: %s", record.action_id, err)
    publishing.push_homes(d, req, incident)  # it leaves the deciders' Home tabs


async def expire_overdue(d: ActDeps) -> int:
    """End pending approval requests whose time ran out with nobody answering: the request
    becomes ``expired``, its message loses its buttons, the action is closed. Idempotent
    and safe on several replicas (the store's transaction lets one of them expire each).
    Returns how many this call expired."""
    now = d.config.clock()
    count = 0
    for pending in await d.ports.store.pending_approvals():
        if now < pending.expires_at:
            continue

        def change(r: ApprovalRequest) -> tuple[ApprovalRequest, bool]:
            expired = expire_if_due(r, now)
            return expired, expired.state == "expired" and r.state == "pending"

        new, expired_now = await d.ports.store.update_approval(pending.id, change)
        record = await d.ports.store.get_action(pending.action_id)
        if not expired_now or record is None:
            continue
        count += 1
        here = d.for_cluster(d.clusters.stored(record.cluster))  # the action's cluster
        fields = audit_fields(record, "", "approve")
        await here.journal.audit(
            actor=actors.GPUNODE,
            **fields,
            decision="expired",
            detail="nobody approved in time",
            detail_code="approval_expired",
        )
        await here.journal.timeline(
            record.incident_id, "approval", actors.GPUNODE, "approval expired", said("expired")
        )
        incident = await incident_of(d.ports.store, record)
        await close_approval_message(here, record, new, state="expired", by="", incident=incident)
        await _end(
            here, record, "expired", by=actors.GPUNODE, why="approval expired", incident=incident
        )
    return count


async def _end(
    d: ActDeps,
    record: ActionRecord,
    state: str,
    *,
    by: str,
    why: str,
    incident: Incident | None,
) -> None:
    """Close a request that will never run (denied, expired); the first caller wins."""
    if await d.ports.store.set_action_state(
        record.action_id, "refused", at=d.config.clock(), result={"reason": why}
    ):
        await d.messages.update_message(record, state, by=by, incident=incident)


async def _approved(
    d: ActDeps,
    record: ActionRecord,
    req: ApprovalRequest,
    *,
    by: str,
    channel: str,
    incident: Incident | None,
) -> None:
    await d.journal.timeline(record.incident_id, "approval", by, "approved", said("approved"))
    if not await d.ports.store.set_action_state(record.action_id, "approved", at=d.config.clock()):
        current = await d.ports.store.get_action(record.action_id)
        state = current.state if current else "gone"
        await d.messages.refuse(
            channel,
            by,
            refused("action_will_not_run", state=state),
            audit=audit_fields(record, channel, "execute") | {"outcome": state},
        )
        return
    fresh = await d.ports.store.get_action(record.action_id)
    await execute(d, fresh or record, by=by, channel=channel, approval_id=req.id, incident=incident)
