"""What an approver sees: the requester's dry run, kept and carried into the approval request.

The dry run runs when the requester submits the tier's modal (``requesting``); its result is
noted on the action (``result["dry_run"]``). When Apply needs approval (``applying``), the
approval request is built from that same result, so the approver reads the exact steps (each
pod to evict with its owner, from the incident's cluster view), the relief, and the server's
answer with every PodDisruptionBudget block named, before approving. The dry-run message
itself stays in the thread, only its buttons give way to "Awaiting approval".

A plan whose every eviction the dry run found blocked is closed at the dry run and says so
(``all_blocked``): nobody is asked to apply or approve a plan that would evict nothing.
"""

from __future__ import annotations

import logging

from bot.core.model.incidents import Incident
from bot.core.reporting.outcomes import DryRun, StepsReport
from bot.core.reporting.records import ActionRecord, EvidenceSnapshot
from bot.errors import GpunodeError
from bot.services.acting import ActDeps
from bot.services.action_records import plan_of_record, reason_of
from bot.services.executing import StepsResult

log = logging.getLogger(__name__)
DRY_RUN = "dry_run"  # key in ActionRecord.result: the requester's dry run (StepsResult JSON)


def all_blocked(dry: StepsResult) -> bool:
    """Every eviction of an otherwise clean dry run would be blocked by a budget."""
    return dry.ok and bool(dry.evictions) and all(e.status == "blocked" for e in dry.evictions)


def owners_of(snap: EvidenceSnapshot | None) -> dict[str, str]:
    """``namespace/name`` -> ``Kind/name`` of each pod's top owner in the incident's view."""
    if snap is None or snap.view is None:
        return {}
    return {
        p.key: f"{p.top_owner.kind}/{p.top_owner.name}"
        for p in snap.view.pods
        if p.top_owner is not None
    }


async def keep_dry_run(
    d: ActDeps, record: ActionRecord, dry: StepsReport, incident: Incident | None
) -> None:
    """The dry-run message as it was, its Apply/Cancel replaced by "Awaiting approval"."""
    if incident is None or record.message_ts is None:
        return
    plan = plan_of_record(record)
    told = DryRun(
        action_id=record.action_id,
        plan=plan,
        requester=record.requester,
        reason=reason_of(record),
        result=dry,
        needs_approval=True,
        node_ref=d.node_ref(plan.node),
        awaiting=True,
    )
    try:
        await d.ports.thread.update(incident.channel, record.message_ts, told, incident=incident)
    except GpunodeError as err:
        log.warning("could not mark the dry run of %s as awaiting: %s", record.action_id, err)
