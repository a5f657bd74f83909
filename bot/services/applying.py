"""Steps 3 and 5 of an action: the requester's Apply, then claim it, re-check the world,
run it for real, report everything.

Apply (``apply``) is the requester's confirmation after seeing the dry run; only the
requester may press it. When the policy needs approvals, Apply posts one approval request
(a repeated Apply, from a double click, a Slack retry or another replica, is answered but
posts nothing new: ``remember_event`` gates it) and the votes go on in ``approving``;
otherwise it executes at once (``execute``).

Order matters and is the safety argument:
1. ``store.claim_action`` is one atomic UPDATE made before any cluster call: of any number
   of clicks, retries and replicas, exactly one caller proceeds; it is audited (``claimed``,
   by whom) and the message's buttons are removed right away, before anything runs;
2. the node, pods and target controllers are re-read; a stale plan is refused (``refused``);
3. the steps run; the result (what changed, what failed, what did not run) is stored,
   audited, put in the timeline and shown in place of the buttons;
4. a re-diagnosis runs in the background and posts a before/after diff.
Whatever goes wrong after the claim, the action ends ``failed`` with the reason: it is never
left ``claimed`` or ``running`` by this process (only a crash does that; see reconciling).
"""

from __future__ import annotations

import logging
from typing import Any

from bot.core.governance.approvals import mark_executed, new_request
from bot.core.governance.impersonation import ActingAs
from bot.core.governance.policy import ActionRequestInfo, Deny, NeedsApproval, decide
from bot.core.model import actors
from bot.core.model.actions import ActionPlan, Step
from bot.core.model.incidents import Incident, said
from bot.core.remedies.planning import undo_steps
from bot.core.remedies.staleness import Why, controller_key, controller_steps, stale_reason
from bot.core.reporting.diffing import diff_diagnoses
from bot.core.reporting.outcomes import (
    ActionDiff,
    ActionFailure,
    ApprovalRequested,
    StepsReport,
    action_outcome,
    refused,
)
from bot.core.reporting.records import ActionRecord, ActionState, EvidenceSnapshot
from bot.errors import GpunodeError, NotFoundError, WriteUnknownError
from bot.services import approval_view, publishing, watching
from bot.services.acting import ActDeps
from bot.services.action_records import (
    audit_fields,
    incident_of,
    plan_of_record,
    reason_of,
    snapshot_of,
)
from bot.services.clusters import incident_at
from bot.services.executing import OnUnanswered, StepsResult, run_steps

log = logging.getLogger(__name__)
APPROVAL_MESSAGE = "approval_message"  # key in ActionRecord.result: {"channel", "ts"}


async def apply(
    d: ActDeps, record: ActionRecord | None, *, action_id: str, user: str, channel: str
) -> None:
    """``record``: action ``action_id`` as the caller read it (None: not in the store)."""
    if record is None:
        await d.messages.refuse(
            channel,
            user,
            refused("action_unknown"),
            audit={"action": "apply", "action_id": action_id},
        )
        return
    # the incident, read once for the whole Apply and passed along
    incident = await incident_of(d.ports.store, record)
    thread_ts = incident.thread_ts if incident else None
    fields = audit_fields(record, channel, "apply")
    if user != record.requester:
        why = refused("not_the_requester", requester=record.requester)
        await d.messages.refuse(channel, user, why, thread_ts=thread_ts, audit=fields)
        return
    plan = plan_of_record(record)
    principal = await d.principal(user, channel)
    decision = decide(principal, ActionRequestInfo(tier=plan.tier), d.policy)
    if isinstance(decision, Deny):
        await d.messages.refuse(channel, user, decision, thread_ts=thread_ts, audit=fields)
        return
    if record.state != "requested":
        await d.messages.refuse(
            channel,
            user,
            refused("action_already", state=record.state),
            thread_ts=thread_ts,
            audit=fields,
        )
        return
    if isinstance(decision, NeedsApproval):
        await _request_approval(d, record, decision, incident, channel=channel)
        return
    await execute(d, record, by=user, channel=channel, incident=incident)


async def _request_approval(
    d: ActDeps,
    record: ActionRecord,
    decision: NeedsApproval,
    incident: Incident | None,
    *,
    channel: str,
) -> None:
    if not await d.ports.store.remember_event(
        f"approval-requested:{record.action_id}", at=d.config.clock()
    ):
        await d.messages.say(channel, record.requester, "approval_pending")
        return
    plan = plan_of_record(record)
    req = new_request(
        d.config.new_id(),
        record.action_id,
        tier=plan.tier,
        requester=record.requester,
        quorum=decision.quorum,
        at=d.config.clock(),
        ttl_s=d.config.approval_ttl_s,
    )
    await d.ports.store.save_approval(req)
    await d.journal.audit(
        actor=record.requester,
        **audit_fields(record, channel, "approval_requested"),
        decision="needs_approval",
        detail=f"quorum {decision.quorum}; expires {req.expires_at.isoformat()}",
        detail_code="approval_quorum",
        detail_params={"quorum": decision.quorum, "expires": req.expires_at.isoformat()},
    )
    # what is approved: the requester's own dry run, steps with owners, relief (#23 §2)
    dry = StepsReport.from_json((record.result or {}).get(approval_view.DRY_RUN))
    snap = await snapshot_of(d.ports.store, record) if dry is not None else None
    told = ApprovalRequested(
        plan=plan,
        request=req,
        reason=reason_of(record),
        roles=decision.approver_roles,
        dry_run=dry,
        owners=approval_view.owners_of(snap),
    )
    ts = await d.ports.thread.post(channel, told, incident=incident)
    await d.ports.store.note_action(
        record.action_id, {APPROVAL_MESSAGE: {"channel": channel, "ts": ts}}
    )
    publishing.push_homes(d, req, incident)  # the deciders' Home tabs show it at once
    if dry is None:  # an action requested before dry runs were kept
        await d.messages.update_message(
            record, "awaiting_approval", by=record.requester, incident=incident
        )
    else:  # the dry run stays in the thread; only its buttons give way
        await approval_view.keep_dry_run(d, record, dry, incident)


async def execute(
    d: ActDeps,
    record: ActionRecord,
    *,
    by: str,
    channel: str,
    approval_id: str | None = None,
    incident: Incident | None = None,
) -> bool:
    """Run the action once. False when another caller already claimed it. ``incident``:
    the action's incident when the caller has read it (else it is read once here)."""
    if incident is None:
        incident = await incident_of(d.ports.store, record)
    fields = audit_fields(record, channel, "execute")
    if not await d.ports.store.claim_action(
        record.action_id, d.config.replica_id, at=d.config.clock()
    ):
        current = await d.ports.store.get_action(record.action_id)
        state = current.state if current else "gone"
        await d.messages.refuse(channel, by, refused("action_already", state=state), audit=fields)
        return False
    plan = plan_of_record(record)
    try:
        # who pressed Apply is on record before any cluster call: a crash mid-apply leaves
        # this row, and the message loses its Apply/Cancel buttons at once
        await d.journal.audit(
            actor=by, **fields, decision="claimed", outcome="running", detail=reason_of(record)
        )
        await d.messages.update_message(record, "applying", by=by, incident=incident)
        if approval_id is not None:
            at = d.config.clock()
            await d.ports.store.update_approval(
                approval_id,
                lambda r: (mark_executed(r, at) if r.state == "approved" else r, None),
            )
        reason = await _stale(d, record, plan)
        if reason is not None:
            await _refuse_stale(d, record, reason, by=by, fields=fields, incident=incident)
            return True
        if not await d.ports.store.set_action_state(
            record.action_id, "running", at=d.config.clock()
        ):
            # reconciled meanwhile (marked interrupted by another replica): never run it now
            current = await d.ports.store.get_action(record.action_id)
            state = current.state if current else "gone"
            await d.messages.refuse(
                channel,
                by,
                refused("action_marked_meanwhile", state=state),
                audit=fields,
            )
            return True
        since = d.config.clock().strftime("%Y-%m-%dT%H:%M:%SZ")  # events after this are ours
        # the requester's identity (impersonation), with the approvers as extras: the
        # cluster decides for the person, and its audit names them and who approved
        acting = d.acting(
            record.requester,
            approvers=await _approvers(d, approval_id),
            action_id=record.action_id,
        )
        result = await run_steps(
            d.kube_as(acting),
            list(plan.steps),
            dry_run=False,
            on_unanswered=_unanswered_recorder(d, record, by=by, fields=fields, incident=incident),
        )
    except GpunodeError as err:
        why = f"{err.message}. Nothing was changed."
        cause: dict[str, Any] = {"cause": "error", "error": err.message}
        if err.key:  # a keyed error: each reader reads it in their language
            cause |= {"error_key": err.key, "error_params": dict(err.params)}
        await _crashed(d, record, err.code, why, cause, by=by, fields=fields, incident=incident)
        return True
    except TimeoutError:
        why = "the API server did not answer in time. Nothing was changed; retry in a minute."
        cause = {"cause": "timeout"}
        await _crashed(d, record, "timeout", why, cause, by=by, fields=fields, incident=incident)
        return True
    except Exception as exc:
        why = f"{exc!r}; check the targets by hand before retrying"
        cause = {"cause": "internal", "error": repr(exc)}
        await _crashed(d, record, "internal", why, cause, by=by, fields=fields, incident=incident)
        raise
    await _record(
        d, record, plan, result, by=by, fields=fields, since=since, acting=acting, incident=incident
    )
    return True


async def _approvers(d: ActDeps, approval_id: str | None) -> tuple[str, ...]:
    """The Slack ids that approved, in the order they voted (none without an approval)."""
    if approval_id is None:
        return ()
    req = await d.ports.store.get_approval(approval_id)
    if req is None:
        return ()
    return req.approvers


async def _record(
    d: ActDeps,
    record: ActionRecord,
    plan: ActionPlan,
    result: StepsResult,
    *,
    by: str,
    fields: dict[str, Any],
    since: str,
    acting: ActingAs | None = None,
    incident: Incident | None = None,
) -> None:
    undo = undo_for(plan, result)
    state: ActionState = "succeeded" if result.ok else "failed"
    payload = result.as_json() | {"undo": [s.model_dump(mode="json") for s in undo]}
    if acting is not None:
        payload["acting_as"] = acting.model_dump(mode="json")
    await d.ports.store.set_action_state(
        record.action_id, state, at=d.config.clock(), result=payload
    )
    # what it achieved, not only that every step answered: a PDB-blocked tier 1 is "not
    # applied" in the audit, the timeline (and the chart marker drawn from it) and its message
    done = action_outcome(state, payload)
    for u in result.unanswered:  # what each re-read found, in words, before the result
        landed = {True: "landed", False: "not_landed", None: "unknown"}[u.get("landed")]
        await d.journal.audit(
            actor=by,
            **fields,
            decision="reread",
            outcome=landed,
            detail=unanswered_sentence(u),
        )
    await d.journal.audit(
        actor=by,
        **fields,
        decision="executed" if result.ok else "failed",
        outcome=done.outcome if done.overstated or done.outcome == "unknown" else state,
        changes=payload,
        detail=reason_of(record),
    )
    summary = f"tier {plan.tier} {state}"
    if done.overstated:
        summary = (
            f"tier {plan.tier} {'partly done' if done.outcome == 'partly' else 'not applied'}: "
            f"{done.evicted} of {done.to_evict} pod{'s' if done.to_evict != 1 else ''} evicted"
        )
    if not result.ok and result.applied:
        summary += " after changing part of the cluster (see the action message)"
    if result.unanswered:
        summary += "; " + "; ".join(unanswered_sentence(u) for u in result.unanswered)
    words = said(
        "action_result",
        tier=plan.tier,
        state=state,
        outcome=done.outcome,
        overstated=done.overstated,
        evicted=done.evicted,
        to_evict=done.to_evict,
        partial=not result.ok and bool(result.applied),
        unanswered=[dict(u) for u in result.unanswered],
    )
    await d.journal.timeline(
        record.incident_id,
        "action_result",
        by,
        summary,
        {"action_id": record.action_id, "outcome": done.outcome} | words,
    )
    # a failed action that changed part of the cluster can be undone too (e.g. a node that
    # was cordoned before the evictions failed)
    shown = done.outcome if done.overstated or done.outcome == "unknown" else state
    await d.messages.update_message(
        record, shown, by=by, result=result, undo=bool(undo), incident=incident
    )
    if result.applied:
        await _mitigating(d, incident, by=by)
        d.bg.spawn(watching.watch(d, record, plan, result, since=since), name="watch-action")


def _unanswered_recorder(
    d: ActDeps,
    record: ActionRecord,
    *,
    by: str,
    fields: dict[str, Any],
    incident: Incident | None,
) -> OnUnanswered:
    """Record the unknown state the moment a write gets no answer, before the re-read: a
    crash during the re-read leaves this row (and the action ``running``, which the
    interrupted-action reconciliation reports)."""

    async def record_unknown(step: Step, err: WriteUnknownError) -> None:
        await d.journal.audit(
            actor=by,
            **fields,
            decision="no_answer",
            outcome="unknown",
            detail=f"{err.message}; re-reading {step.kind} {step.name}",
        )
        failure = ActionFailure(
            code="no_answer",
            params={"error": err.message, "error_key": err.key, "error_params": dict(err.params)},
        )
        await d.messages.update_message(
            record, "unknown", by=by, failure=failure, incident=incident
        )

    return record_unknown


def unanswered_sentence(u: dict[str, Any]) -> str:
    """One unanswered write, said plainly (the timeline's words; the thread has a template):
    "cordon gpu-node-01: the cluster did not answer within 10 s; a re-read shows it landed"."""
    step = u.get("step") or {}
    namespace = step.get("namespace")
    target = f"{str(namespace) + '/' if namespace else ''}{step.get('name')}"
    head = f"{step.get('verb')} {target}: the cluster did not answer within {u['waited_s']:g} s"
    if u.get("landed") is None:
        return f"{head}; the re-read failed too, so whether it landed is unknown"
    fields = ", ".join(FIELD_WORDS.get(f, f) for f in u.get("fields") or []) or "the change"
    return f"{head}; a re-read shows {fields} {'landed' if u['landed'] else 'did not land'}"


#: how the timeline names the fields an unanswered write set
FIELD_WORDS = {
    "resources.limits.memory": "the memory limit",
    "resources.requests.memory": "the memory request",
    "resources.limits.cpu": "the CPU limit",
    "resources.requests.cpu": "the CPU request",
    "unschedulable": "the cordon",
    "priorityClassName": "the PriorityClass",
}


async def _mitigating(d: ActDeps, incident: Incident | None, *, by: str) -> None:
    if incident is None:
        return
    if incident.state == "investigating":
        moved, _ = await d.ports.store.set_incident_state(
            incident.id, "mitigating", at=d.config.clock(), actor=by
        )
        await d.diagnose.show_root(moved)  # as just written: no second read
    d.bg.spawn(after(d, incident.id), name=f"rediagnose-{incident.node}")


async def _refuse_stale(
    d: ActDeps,
    record: ActionRecord,
    why: Why,
    *,
    by: str,
    fields: dict[str, Any],
    incident: Incident | None,
) -> None:
    reason = why.text
    await d.ports.store.set_action_state(
        record.action_id,
        "refused",
        at=d.config.clock(),
        result={"reason": reason, "code": why.reason, "params": dict(why.params)},
    )
    told = refused("plan_stale", reason=why.reason, **why.params)
    await d.journal.audit(
        actor=by,
        **fields,
        decision="refused",
        outcome="stale",
        detail=reason,
        detail_code=told.code,
        detail_params=told.params,
    )
    words = said("refused_stale", **dict(why.params), reason=why.reason)
    await d.journal.timeline(
        record.incident_id, "action_result", by, f"refused as stale: {reason}", words
    )
    await d.messages.update_message(record, "stale", by=by, why=told, incident=incident)


async def _crashed(
    d: ActDeps,
    record: ActionRecord,
    code: str,
    message: str,
    cause: dict[str, Any],
    *,
    by: str,
    fields: dict[str, Any],
    incident: Incident | None,
) -> None:
    """After the claim something failed outside the steps (the re-read before acting, the
    store): end ``failed`` and say so, rather than leave the action claimed. ``message``:
    the English account; ``cause``: the same as data (``cause``: error, timeout or internal;
    ``error``: the error's English text or the exception's repr; ``error_key`` and
    ``error_params`` for a keyed error), kept in the timeline entry and the action's result
    so that presenters word it."""
    why = f"could not carry out the action ({code}): {message}"
    words = said("crashed", code=code, message=message, **cause)
    try:
        await d.ports.store.set_action_state(
            record.action_id, "failed", at=d.config.clock(), result={"reason": why} | words
        )
        await d.journal.audit(actor=by, **fields, decision="failed", outcome="error", detail=why)
        await d.journal.timeline(record.incident_id, "action_result", by, why, words)
        failure = ActionFailure(code="crashed", params=words["said"]["params"])
        await d.messages.update_message(record, "failed", by=by, failure=failure, incident=incident)
    except GpunodeError:
        log.exception("could not record the failure of action %s", record.action_id)


def undo_for(plan: ActionPlan, result: StepsResult) -> list[Step]:
    """Steps restoring what ``result`` changed (only changes really made)."""
    steps: list[Step] = []
    planned = [s for s in plan.steps if s.verb != "evict"]
    for step, change in zip(planned, result.changes, strict=False):
        if change.noop or change.dry_run:
            continue
        steps.extend(undo_steps(step, change.before))
    return steps


async def _stale(d: ActDeps, record: ActionRecord, plan: ActionPlan) -> Why | None:
    snap = await snapshot_of(d.ports.store, record)
    if snap is None:
        return Why("no_evidence", "no evidence recorded for this incident; re-diagnose")
    evidence, before = snap.diagnosis, snap.view
    if before is None:
        return Why("no_view", "no cluster view recorded for this incident; re-diagnose")
    try:
        current = await d.kube.get_cluster_view(plan.node)
        controllers: dict[str, dict[str, Any] | None] = {}
        for step in controller_steps(plan):
            try:
                controllers[controller_key(step)] = await d.kube.read_controller(
                    step.kind, step.ref.namespace, step.name
                )
            except NotFoundError:
                controllers[controller_key(step)] = None
    except NotFoundError:
        text = f"node {plan.node} no longer exists; nothing to act on"
        return Why("node_gone", text, {"node": plan.node})
    return stale_reason(
        plan,
        evidence_at=evidence.collected_at,
        now=d.config.clock(),
        max_age_s=d.config.evidence_max_age_s,
        before=before,
        current=current,
        controllers=controllers,
    )


async def after(d: ActDeps, incident_id: str) -> None:
    """Re-diagnose and post what the action bought in the thread: a compact before/after
    (``ActionDiff``) with the tiers the new evidence offers next, and the chart. The new
    evidence is saved, but never reposted: the thread carries the evidence once."""
    incident = await d.ports.store.get_incident(incident_id)
    before = await d.ports.store.latest_snapshot(incident_id)
    if incident is None or before is None:
        return
    # one worker for the re-diagnosis and its chart (else it ends between the two)
    async with d.diagnose.analyst.held():
        await _after(d, incident, before)


async def _after(d: ActDeps, incident: Incident, before: EvidenceSnapshot) -> None:
    outcome = await d.diagnose.diagnose(
        incident_at(d.diagnose.clusters, incident),
        channel=incident.channel,
        user=actors.GPUNODE,
        fresh=True,
        chart=False,
        quiet=True,
    )
    if outcome.diagnosis is None:
        return
    earlier = before.diagnosis
    told = ActionDiff(
        diff=diff_diagnoses(earlier, outcome.diagnosis),
        incident_id=incident.id,
        next_tiers=tuple((p.tier, p.plan_id) for p in outcome.diagnosis.plans if p.available),
    )
    await d.ports.thread.post(incident.channel, told, incident=incident)
    # the same chart as the diagnosis', now with the action marked on it
    await d.diagnose.upload_chart(
        incident,
        outcome.diagnosis,
        outcome.bundle,
        name="after",
        title=f"{incident.node}: memory before and after the action",
        earlier=[(earlier, before.bundle)],
    )
