"""Step 6 of an action: Undo restores what a succeeded (or partly applied) action changed.

The undo steps were computed at execution time from each change's captured before-state
(``planning.undo_steps``) and stored with the result, so Undo sends exactly the previous
values back (a key that was unset is removed again). ``store.claim_undo`` makes the undo run
at most once whatever the clicks and replicas. Evictions cannot be undone (a recreated pod
is a new pod); the outcome message says what was restored. Before claiming, the targets are
re-read: if someone changed one after the action, Undo is refused rather than overwrite it.
"""

from __future__ import annotations

from typing import Any

from bot.core.governance.policy import ActionRequestInfo, Deny, decide
from bot.core.model.actions import Step
from bot.core.model.incidents import said
from bot.core.remedies.staleness import undo_conflict
from bot.core.reporting.outcomes import Refused, refused
from bot.core.reporting.records import ActionRecord
from bot.errors import KubeError, NotFoundError
from bot.services.acting import ActDeps
from bot.services.action_records import audit_fields, incident_of, tier_of
from bot.services.executing import run_steps


async def _conflict(d: ActDeps, changes: list[dict[str, Any]], node: str) -> Refused | None:
    """Re-read what the action changed; say why undo would overwrite someone else's edit."""
    try:
        unschedulable = None
        if any(c.get("verb") in ("cordon", "uncordon") for c in changes):
            unschedulable = (await d.kube.get_cluster_view(node)).node.unschedulable
        controllers: dict[str, dict[str, Any] | None] = {}
        for c in changes:
            if c.get("verb") in ("set_priority_class", "patch_resources"):
                key = f"{c.get('kind')}/{c.get('namespace')}/{c.get('name')}"
                try:
                    controllers[key] = await d.kube.read_controller(
                        str(c.get("kind")), str(c.get("namespace")), str(c.get("name"))
                    )
                except NotFoundError:
                    controllers[key] = None
    except KubeError as err:
        return refused(
            "undo_reread_failed",
            code=err.code,
            message=err.message,
            error_key=err.key,
            error_params=err.params,
        )
    why = undo_conflict(changes, node_unschedulable=unschedulable, controllers=controllers)
    return None if why is None else refused("undo_conflict", reason=why.reason, **why.params)


async def undo(
    d: ActDeps, record: ActionRecord | None, *, action_id: str, user: str, channel: str
) -> None:
    """``record``: action ``action_id`` as the caller read it (None: not in the store)."""
    if record is None or record.state not in ("succeeded", "failed") or not record.result:
        state = record.state if record else "unknown"
        await d.messages.refuse(
            channel,
            user,
            refused("nothing_to_undo", state=state),
            audit={"action": "undo", "action_id": action_id},
        )
        return
    fields = audit_fields(record, channel, "undo")
    incident = await incident_of(d.ports.store, record)  # once per Undo
    thread_ts = incident.thread_ts if incident else None
    principal = await d.principal(user, channel)
    decision = decide(principal, ActionRequestInfo(tier=tier_of(record.tier), undo=True), d.policy)
    if isinstance(decision, Deny):
        await d.messages.refuse(channel, user, decision, thread_ts=thread_ts, audit=fields)
        return
    steps = [Step.model_validate(s) for s in record.result.get("undo", [])]
    if not steps:
        await d.messages.refuse(channel, user, refused("nothing_undoable"), audit=fields)
        return
    conflict = await _conflict(d, record.result.get("changes") or [], str(record.plan.get("node")))
    if conflict is not None:
        await d.messages.refuse(channel, user, conflict, thread_ts=thread_ts, audit=fields)
        return
    if not await d.ports.store.claim_undo(action_id, d.config.replica_id, at=d.config.clock()):
        await d.messages.refuse(channel, user, refused("undo_in_progress"), audit=fields)
        return
    acting = d.acting(user, action_id=action_id)
    result = await run_steps(d.kube_as(acting), steps, dry_run=False)
    if result.ok:
        await d.ports.store.set_action_state(
            action_id,
            "undone",
            at=d.config.clock(),
            result=record.result | {"undo_result": result.as_json()},
        )
    await d.journal.audit(
        actor=user,
        **fields,
        decision="undone" if result.ok else "failed",
        changes=result.as_json()
        | ({"acting_as": acting.model_dump(mode="json")} if acting else {}),
        outcome="undone" if result.ok else "undo_failed",
    )
    text = f"tier {record.tier} undone" if result.ok else "undo failed (see the action message)"
    words = said("undone", tier=record.tier) if result.ok else said("undo_failed", tier=record.tier)
    await d.journal.timeline(
        record.incident_id, "action_result", user, text, {"action_id": action_id} | words
    )
    shown = "undone" if result.ok else "undo_failed"
    await d.messages.update_message(record, shown, by=user, result=result, incident=incident)
