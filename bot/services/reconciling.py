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

from bot.core.model import actors
from bot.core.model.actions import ActionPlan
from bot.core.model.incidents import said
from bot.core.reporting.outcomes import notice
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
        observed = await observe(here, plan)
        if not await d.ports.store.set_action_state(
            record.action_id,
            "failed",
            at=d.config.clock(),
            result={"reason": "interrupted by a restart", "observed": observed},
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
            {"action_id": record.action_id} | said("interrupted", tier=plan.tier, found=observed),
        )
        incident = await incident_of(d.ports.store, record)
        # the action's message said "Applying…" since the claim: it gets its outcome
        await here.messages.update_message(
            record,
            "failed",
            by=actors.GPUNODE,
            detail=f"Interrupted by a restart. Found: {observed}",
            incident=incident,
        )
        if incident is None or not incident.thread_ts:
            continue
        told = notice("interrupted", action_id=record.action_id, tier=plan.tier, observed=observed)
        try:
            await d.ports.thread.post(incident.channel, told, incident=incident)
        except GpunodeError as err:
            log.warning("could not report interrupted action %s: %s", record.action_id, err)
    return count


async def observe(d: ActDeps, plan: ActionPlan) -> str:
    """A one-line account of the plan's targets as the cluster shows them now."""
    try:
        view = await d.kube.get_cluster_view(plan.node)
    except (KubeError, TimeoutError) as err:
        code = err.code if isinstance(err, KubeError) else "timeout"
        return f"could not read node {plan.node} ({code}); check it by hand"
    parts = [f"node {plan.node} {'cordoned' if view.node.unschedulable else 'schedulable'}"]
    evict = {f"{s.namespace}/{s.name}" for s in plan.steps if s.verb == "evict"}
    if evict:
        still = sum(1 for p in view.pods if p.key in evict)
        parts.append(f"{len(evict) - still} of {len(evict)} planned evictions done")
    for step in plan.steps:
        if step.verb in ("set_priority_class", "patch_resources"):
            parts.append(f"{step.ref.key}: check its current spec")
    return "; ".join(parts)
