"""Report actions a stopped process left ``claimed`` or ``running`` (at start, or on the
leader when another replica stopped).

A crash between the claim and the recorded result leaves the cluster in an unknown state.
Nothing is retried automatically (the world may have moved); each such action is marked
``failed`` with what the cluster shows now, audited, and reported in its thread so a human
decides. Running this on every start is idempotent: a reconciled action is no longer
claimed or running.
"""

from __future__ import annotations

import logging
from datetime import datetime
from typing import Any

from bot.core.model import actors
from bot.core.model.actions import ActionPlan
from bot.core.model.incidents import said
from bot.core.reporting.outcomes import ActionFailure, notice
from bot.errors import GpunodeError, KubeError
from bot.services.acting import ActDeps
from bot.services.action_records import incident_of, plan_of_record

log = logging.getLogger(__name__)


async def reconcile_interrupted(d: ActDeps, *, orphaned_before: datetime | None = None) -> int:
    """Number of interrupted actions found (and reported). ``orphaned_before``: with several
    replicas, only actions whose claimer has not been alive since then (bot/services/
    leading.py); the leader runs this when it takes over and then periodically."""
    count = 0
    for record in await d.ports.store.interrupted_actions(orphaned_before=orphaned_before):
        count += 1
        plan = plan_of_record(record)
        here = d.for_cluster(d.clusters.stored(record.cluster))
        observed, found = await observe(here, plan)
        words = said("interrupted", tier=plan.tier, found=found)
        if not await d.ports.store.set_action_state(
            record.action_id,
            "failed",
            at=d.config.clock(),
            # what was found, as codes (``words``: the audit presenter words the row from it)
            result={"reason": "interrupted by a restart", "observed": observed} | words,
        ):
            continue  # another replica reconciled it first
        await here.journal.audit(
            actor=actors.GPUNODE,
            action=f"tier{plan.tier}.reconcile",
            incident_id=record.incident_id,
            action_id=record.action_id,
            tier=plan.tier,
            decision="interrupted",
            outcome="failed",
            detail=observed,
        )
        await here.journal.timeline(
            record.incident_id,
            "action_result",
            actors.GPUNODE,
            f"tier {plan.tier} interrupted by a restart; found: {observed}",
            {"action_id": record.action_id} | words,
        )
        incident = await incident_of(d.ports.store, record)
        # the action's message said "Applying…" since the claim: it gets its outcome
        await here.messages.update_message(
            record,
            "failed",
            by=actors.GPUNODE,
            failure=ActionFailure(code="interrupted", params={"found": found}),
            incident=incident,
        )
        if incident is None or not incident.thread_ts:
            continue
        told = notice(
            "interrupted",
            action_id=record.action_id,
            tier=plan.tier,
            observed=observed,
            found=found,
        )
        try:
            await d.ports.thread.post(incident.channel, told, incident=incident)
        except GpunodeError as err:
            log.warning("could not report interrupted action %s: %s", record.action_id, err)
    return count


async def observe(d: ActDeps, plan: ActionPlan) -> tuple[str, list[dict[str, Any]]]:
    """The plan's targets as the cluster shows them now: a one-line English account (logs,
    older readers) and the same as data, one ``{"code", "params"}`` per clause, which the
    presenters word (``templates/sentences/timeline.j2``, ``found``)."""
    found = await _found(d, plan)
    return "; ".join(_FOUND_TEXT[f["code"]].format(**f["params"]) for f in found), found


#: each clause of ``observe``'s account in English, by code
_FOUND_TEXT = {
    "unreadable": "could not read node {node} ({error}); check it by hand",
    "cordoned": "node {node} cordoned",
    "schedulable": "node {node} schedulable",
    "evictions": "{done} of {planned} planned evictions done",
    "check_spec": "{target}: check its current spec",
}


def _clause(code: str, **params: Any) -> dict[str, Any]:
    return {"code": code, "params": params}


async def _found(d: ActDeps, plan: ActionPlan) -> list[dict[str, Any]]:
    try:
        view = await d.kube.get_cluster_view(plan.node)
    except (KubeError, TimeoutError) as err:
        code = err.code if isinstance(err, KubeError) else "timeout"
        return [_clause("unreadable", node=plan.node, error=code)]
    found = [_clause("cordoned" if view.node.unschedulable else "schedulable", node=plan.node)]
    evict = {f"{s.namespace}/{s.name}" for s in plan.steps if s.verb == "evict"}
    if evict:
        still = sum(1 for p in view.pods if p.key in evict)
        found.append(_clause("evictions", done=len(evict) - still, planned=len(evict)))
    for step in plan.steps:
        if step.verb in ("set_priority_class", "patch_resources"):
            found.append(_clause("check_spec", target=step.ref.key))
    return found
