"""Steps 1-2 of an action: tier button -> confirmation modal -> recorded request + dry run.

Nothing here changes the cluster: the only Kubernetes calls are server-side dry runs
(``dry_run=True``) of exactly the steps that Apply would send, edited values included.
A dry run that fails ends the request (state ``refused``) and offers no Apply button:
applying would fail the same way.
"""

from __future__ import annotations

import logging
from typing import Any

from bot.core.governance.policy import ActionRequestInfo, Deny, NeedsApproval, decide
from bot.core.model import actors
from bot.core.model.actions import ActionPlan
from bot.core.model.cluster import ClusterView
from bot.core.model.incidents import said
from bot.core.model.quantity import QuantityError, parse_quantity
from bot.core.remedies.editing import FieldError, Tier3Bounds, Tier3Edits, apply_tier3_edits
from bot.core.reporting.outcomes import ActionForm, DryRun, Refused, StepsReport, refused
from bot.core.reporting.records import ActionRecord
from bot.errors import EXPIRED_TRIGGER, SlackError
from bot.services import approval_view
from bot.services.acting import ActDeps
from bot.services.action_records import audit_fields, available_plan, tier_of
from bot.services.executing import StepsResult, run_steps

log = logging.getLogger(__name__)
NOT_CURRENT = refused("plan_not_current")


async def open_confirmation(
    d: ActDeps,
    *,
    tier: int,
    incident_id: str,
    plan_id: str,
    user: str,
    channel: str,
    trigger_id: str,
) -> None:
    found = await available_plan(d.ports.store, incident_id, plan_id)
    incident = found[0] if found else await d.ports.store.get_incident(incident_id)
    thread_ts = incident.thread_ts if incident else None
    plan_tier = found[2].tier if found else tier
    principal = await d.principal(user, channel)
    decision = decide(principal, ActionRequestInfo(tier=tier_of(plan_tier)), d.policy)
    if isinstance(decision, Deny):
        await d.messages.refuse(
            channel,
            user,
            decision,
            thread_ts=thread_ts,
            audit={
                "action": f"tier{plan_tier}.request",
                "incident_id": incident_id,
                "tier": plan_tier,
            },
        )
        return
    if found is None:
        await d.messages.refuse(
            channel,
            user,
            NOT_CURRENT,
            thread_ts=thread_ts,
            audit={
                "action": f"tier{plan_tier}.request",
                "incident_id": incident_id,
                "tier": plan_tier,
                "outcome": "not_current",
                "detail": f"plan {plan_id}",
                "detail_params": {"plan": plan_id},
            },
        )
        return
    plan = found[2]
    meta = {"incident": incident_id, "plan_id": plan_id, "tier": plan.tier, "channel": channel}
    try:
        await d.ports.thread.show(trigger_id, channel, user, ActionForm(plan=plan, meta=meta))
    except SlackError as exc:
        if exc.code != EXPIRED_TRIGGER:
            raise
        # Slack opens a modal only within 3 s of the click; a busy bot can miss that, and
        # then nothing would happen on screen: the person is told to press again instead
        log.warning("the confirmation modal for %s opened too late (%s)", user, exc)
        await d.messages.say(channel, user, "form_expired", thread_ts=thread_ts)


_TEXT_FIELDS = ("memory_limit", "memory_request", "cpu_limit", "cpu_request", "omp_num_threads")


def _edits(values: dict[str, Any], errors: dict[str, str]) -> Tier3Edits | None:
    """The modal's tier-3 fields as edits; a field of the wrong kind is an error keyed by
    that field (never by another one)."""
    for field in _TEXT_FIELDS:
        if not isinstance(values.get(field), str | None):
            errors[field] = FieldError("enter text here", "field_not_text")
    omp_text = values.get("omp_num_threads")
    omp: int | None = None
    if isinstance(omp_text, str) and omp_text.strip():
        digits = omp_text.strip()
        if digits.isascii() and digits.isdecimal() and len(digits) <= 9:
            omp = int(digits)
        else:
            errors["omp_num_threads"] = FieldError("use a whole number", "field_not_whole")
    if errors:
        return None
    return Tier3Edits(
        memory_limit=str(values.get("memory_limit") or ""),
        memory_request=str(values.get("memory_request") or ""),
        cpu_limit=values.get("cpu_limit") or None,
        cpu_request=values.get("cpu_request") or None,
        omp_num_threads=omp,
        accept_oom=bool(values.get("accept_oom")),
    )


def bounds_of(view: ClusterView | None) -> Tier3Bounds:
    """The node's allocatable memory and CPU from a snapshot's cluster view (None: unknown)."""
    if view is None:
        return Tier3Bounds()
    allocatable = view.node.allocatable
    memory, cpu = allocatable.get("memory"), allocatable.get("cpu")
    try:
        mem_q = parse_quantity(memory) if isinstance(memory, str) else None
        cpu_q = parse_quantity(cpu) if isinstance(cpu, str) else None
    except QuantityError:
        return Tier3Bounds()
    return Tier3Bounds(
        memory_bytes=mem_q.value() if mem_q else None,
        memory_text=memory if mem_q else None,
        cpu_millis=cpu_q.milli_value() if cpu_q else None,
        cpu_text=cpu if cpu_q else None,
    )


async def validate_submission(
    d: ActDeps, meta: dict[str, Any], values: dict[str, Any], *, user: str = ""
) -> tuple[ActionPlan | None, dict[str, str]]:
    """Runs inside Slack's 3-second ack: the plan to dry-run, or errors keyed by block id.
    A plan that is not (or no longer) the incident's is refused, and audited as ``user``."""
    reason = values.get("reason")
    reason = reason.strip() if isinstance(reason, str) else ""
    errors: dict[str, str] = {}
    if len(reason) < 3:
        errors["reason"] = FieldError(
            "say why, in a few words (it goes into the audit log)", "field_reason_short"
        )
    incident_id, plan_id = str(meta.get("incident", "")), str(meta.get("plan_id", ""))
    found = await available_plan(d.ports.store, incident_id, plan_id)
    if found is None:
        await d.journal.audit(
            actor=user or actors.UNKNOWN,
            action="request",
            channel=str(meta.get("channel", "")),
            incident_id=incident_id or None,
            decision="refused",
            outcome="not_current",
            detail=f"plan {plan_id} is not a current plan of this incident",
            detail_code=NOT_CURRENT.code,
            detail_params={"plan": plan_id},
        )
        stale = FieldError(
            "this plan is no longer current; close and re-diagnose", "field_plan_gone"
        )
        return None, {"reason": stale}
    plan = found[2]
    if plan.tier == 3:
        edits = _edits(values, errors)
        if edits is None:
            return None, errors
        bounds = bounds_of(found[1].view)  # the evidence plan_of read: no second read
        edited = apply_tier3_edits(plan, edits, bounds=bounds)
        if isinstance(edited, dict):
            errors.update(edited)
        else:
            plan = edited
    return (None if errors else plan), errors


async def submitted(
    d: ActDeps, *, meta: dict[str, Any], plan: ActionPlan, reason: str, user: str
) -> str:
    """Record the request, dry-run it, post the result with Apply/Cancel. Returns the id."""
    incident_id, channel = str(meta["incident"]), str(meta["channel"])
    action_id = d.config.new_id()
    incident = await d.ports.store.get_incident(incident_id)
    thread_ts = incident.thread_ts if incident else None
    principal = await d.principal(user, channel)
    decision = decide(principal, ActionRequestInfo(tier=plan.tier), d.policy)
    if isinstance(decision, Deny) or incident is None:
        why: Refused | Deny = decision if isinstance(decision, Deny) else NOT_CURRENT
        await d.messages.refuse(
            channel,
            user,
            why,
            thread_ts=thread_ts,
            audit={
                "action": f"tier{plan.tier}.request",
                "incident_id": incident_id,
                "tier": plan.tier,
            },
        )
        return action_id
    now = d.config.clock()
    record = ActionRecord(
        action_id=action_id,
        incident_id=incident_id,
        tier=plan.tier,
        plan=plan.model_dump(mode="json") | {"reason": reason},
        requester=user,
        needs_approval=isinstance(decision, NeedsApproval),
        created_at=now,
        updated_at=now,
        cluster=d.cluster,
    )
    await d.ports.store.create_action(record)
    acting = d.acting(user, action_id=action_id)
    dry = await run_steps(d.kube_as(acting), list(plan.steps), dry_run=True)
    blocked = approval_view.all_blocked(dry)  # it would evict nothing: closed, said so
    await d.journal.audit(
        actor=user,
        **audit_fields(record, channel, "dry_run"),
        decision="needs_approval" if record.needs_approval else "allowed",
        dry_run=dry.as_json() | ({"acting_as": acting.model_dump(mode="json")} if acting else {}),
        outcome="dry_run_failed" if not dry.ok else "all_blocked" if blocked else "ok",
        detail=reason,
    )
    await d.journal.timeline(
        incident_id,
        "action_requested",
        user,
        f"tier {plan.tier} requested: {reason}",
        {"action_id": action_id, "dry_run_ok": dry.ok} | said("requested", tier=plan.tier),
    )
    if not dry.ok or blocked:
        await _end_failed_dry_run(d, record, dry)
    told = DryRun(
        action_id=action_id,
        plan=plan,
        requester=user,
        reason=reason,
        result=StepsReport.from_json(dry.as_json()) or StepsReport(),
        needs_approval=record.needs_approval,
        node_ref=d.node_ref(plan.node),
        all_blocked=blocked,
    )
    if dry.ok and not blocked:  # what the approval request will carry (approval_view),
        # kept before Apply can be pressed
        await d.ports.store.note_action(action_id, {approval_view.DRY_RUN: dry.as_json()})
    ts = await d.ports.thread.post(channel, told, incident=incident, thread_ts=thread_ts)
    await d.ports.store.set_action_message(action_id, ts)
    return action_id


async def _end_failed_dry_run(d: ActDeps, record: ActionRecord, dry: StepsResult) -> None:
    error = (
        dry.error.message
        if dry.error
        else "every eviction would be blocked by a PodDisruptionBudget"
        if approval_view.all_blocked(dry)
        else "an eviction was refused"
    )
    await d.ports.store.set_action_state(
        record.action_id,
        "refused",
        at=d.config.clock(),
        result={"reason": f"dry run failed: {error}", "dry_run": dry.as_json()},
    )


async def cancel(
    d: ActDeps, record: ActionRecord | None, *, action_id: str, user: str, channel: str
) -> None:
    """``record``: action ``action_id`` as the caller read it (None: not in the store)."""
    if record is None or record.state not in ("requested", "approved"):
        state = record.state if record else "unknown"
        await d.messages.refuse(
            channel,
            user,
            refused("nothing_to_cancel", state=state),
            audit={"action": "cancel", "action_id": action_id, "outcome": state},
        )
        return
    fields = audit_fields(record, channel, "cancel")
    if user != record.requester:
        await d.messages.refuse(channel, user, refused("only_requester_cancels"), audit=fields)
        return
    if not await d.ports.store.set_action_state(
        action_id, "refused", at=d.config.clock(), result={"reason": f"cancelled by {user}"}
    ):
        await d.messages.refuse(channel, user, refused("cancel_too_late"), audit=fields)
        return
    await d.journal.audit(actor=user, **fields, decision="cancelled")
    cancelled = said("cancelled", tier=record.tier)
    await d.journal.timeline(
        record.incident_id, "action_result", user, f"tier {record.tier} cancelled", cancelled
    )
    await d.messages.update_message(record, "cancelled", by=user)
