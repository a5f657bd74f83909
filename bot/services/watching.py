"""After an action: watch it land, then say so in the incident thread.

The API server accepting a patch or an eviction is not the end: a template change is
*applied* only when the controller's pods run the new template
(``bot.core.remedies.watching.judge``), an in-place resize only when the kubelet actuated it
(status resources = spec), and an eviction is *complete* only when the pod is gone (a pod recreated
under the same name has another uid). The watch polls every ``watch_interval_s`` for at most
``watch_timeout_s`` and posts one message per rollout and one for the evictions, whatever the
outcome: applied, stalled (with the pods' reasons and the FailedCreate/FailedScheduling events),
still rolling, or nothing restarting (``OnDelete``).
"""

from __future__ import annotations

import asyncio
import logging

from bot.core.model import actors
from bot.core.model.actions import ActionPlan
from bot.core.model.incidents import said
from bot.core.model.refs import ObjectRef
from bot.core.remedies.watching import TEMPLATE_VERBS, RolloutProgress, Verdict, judge
from bot.core.reporting.outcomes import EvictionsWatched, RolloutWatched
from bot.core.reporting.records import ActionRecord
from bot.errors import GpunodeError
from bot.services.acting import ActDeps
from bot.services.action_records import incident_of
from bot.services.executing import StepsResult

log = logging.getLogger(__name__)


def rollout_targets(plan: ActionPlan, result: StepsResult) -> list[ObjectRef]:
    """Controllers whose template the action really changed."""
    planned = [s for s in plan.steps if s.verb != "evict"]
    out = []
    for step, change in zip(planned, result.changes, strict=False):
        if step.verb in TEMPLATE_VERBS and not change.noop and not change.dry_run:
            key = step.ref
            if key not in out:
                out.append(key)
    return out


async def watch(
    d: ActDeps, record: ActionRecord, plan: ActionPlan, result: StepsResult, *, since: str
) -> None:
    incident = await incident_of(d.ports.store, record)
    if incident is None:
        return
    snap = await d.ports.store.latest_snapshot(incident.id)
    uids = {}
    if snap is not None and snap.view is not None:
        uids = {p.key: p.uid for p in snap.view.pods}
    evicted = [
        (e.namespace, e.name, uids.get(f"{e.namespace}/{e.name}", ""))
        for e in result.evictions
        if e.status == "evicted"
    ]
    targets = rollout_targets(plan, result)
    resized = [
        (s.ref.namespace, s.name, s.container)
        for s, c in zip([s for s in plan.steps if s.verb != "evict"], result.changes, strict=False)
        if s.verb == "resize_pod" and not c.noop and not c.dry_run
    ]
    if not evicted and not targets and not resized:
        return
    loop = asyncio.get_running_loop()
    start = loop.time()
    progress: dict[ObjectRef, tuple[RolloutProgress, Verdict]] = {}
    left = [f"{ns}/{n}" for ns, n, _ in evicted]
    while True:
        try:
            for ref in targets:
                p = await d.kube.rollout_progress(*ref, since=since)
                progress[ref] = (p, judge(p))
            for ns, name, container in resized:
                p = await d.kube.resize_progress(ns, name, container)
                progress[ObjectRef("Pod", ns, name)] = (p, judge(p))
            if evicted:
                left = await d.kube.pods_present(evicted)
        except GpunodeError as err:
            log.warning("watching action %s: %s", record.action_id, err)
        done = all(v in ("applied", "on_delete") for _, v in progress.values()) and len(
            progress
        ) == len(targets) + len(resized)
        waited = loop.time() - start
        if (done and not left) or waited >= d.config.watch_timeout_s:
            break
        await asyncio.sleep(d.config.watch_interval_s)
    waited = loop.time() - start
    for p, verdict in progress.values():
        told = RolloutWatched(progress=p, verdict=verdict, waited_s=waited)
        await d.ports.thread.post(incident.channel, told, incident=incident)
    if evicted:
        gone = [f"{ns}/{n}" for ns, n, _ in evicted if f"{ns}/{n}" not in left]
        told_gone = EvictionsWatched(gone=gone, left=left, waited_s=waited)
        await d.ports.thread.post(incident.channel, told_gone, incident=incident)
    summary = "; ".join(f"{p.key} {v}" for p, v in progress.values())
    if evicted:
        summary = "; ".join(filter(None, [summary, f"evictions complete: {not left}"]))
    words = said(
        "watched",
        rollouts=[[p.key, v] for p, v in progress.values()],
        evictions_done=(not left) if evicted else None,
    )
    await d.journal.timeline(
        incident.id, "action_result", actors.GPUNODE, f"watched: {summary}", words
    )
