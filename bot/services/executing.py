"""Carrying out an ActionPlan's steps through the KubePort (dry run or for real).

Steps run in plan order; evictions of one plan run concurrently (as ``kubectl drain`` does)
behind a small gate. The first failing non-eviction step stops the run: what already happened
and what did not are both reported, never a silent half-application. A failed eviction does
not stop the others (each pod is independent) but makes the whole result not ``ok``.
A call that hangs is cut off after ``STEP_TIMEOUT_S`` and reported as a timeout.

A real write that got no answer (``WriteUnknownError``: the client's timeout, or a connection
cut after sending) may have landed: ``on_unanswered`` hears of it first (the action records
the unknown state), then ``settling`` re-reads the object. A write that landed counts as
done (with its undo), one that did not as failed; one nobody can tell stops the run.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, TypeVar

from bot.core.model.actions import (
    AnnotateNodeParams,
    PatchResourcesParams,
    PriorityClassNameParams,
    PriorityClassParams,
    ResizePodParams,
    Step,
)
from bot.core.model.changes import Change, EvictionOutcome
from bot.errors import GpunodeError, KubeUnavailableError, WriteUnknownError
from bot.services.ports import KubePort
from bot.services.settling import settle

EVICTION_CONCURRENCY = 8  # enough to drain a GPU node's pods quickly without API bursts
# an eviction or patch answers in well under a second; a minute means the API is wedged
STEP_TIMEOUT_S = 60.0
T = TypeVar("T")


@dataclass
class StepsResult:
    changes: list[Change] = field(default_factory=list)
    evictions: list[EvictionOutcome] = field(default_factory=list)
    failed_step: Step | None = None
    error: GpunodeError | None = None
    not_run: list[Step] = field(default_factory=list)
    #: writes that got no answer, with what the re-read found (``Settled.as_json``)
    unanswered: list[dict[str, Any]] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """Every step ran and no eviction failed (a PDB-blocked eviction is an answer, not
        a failure: the pod keeps running and the message says so)."""
        return self.error is None and not any(e.status == "failed" for e in self.evictions)

    @property
    def applied(self) -> bool:
        """Something in the cluster changed (for real, not dry run)."""
        return any(not c.noop and not c.dry_run for c in self.changes) or any(
            e.status == "evicted" for e in self.evictions
        )

    def as_json(self) -> dict[str, Any]:
        return {
            "changes": [c.model_dump(mode="json") for c in self.changes],
            "evictions": [e.model_dump(mode="json") for e in self.evictions],
            "failed_step": self.failed_step.model_dump(mode="json") if self.failed_step else None,
            "error": _error_json(self.error) if self.error else None,
            "not_run": [s.model_dump(mode="json") for s in self.not_run],
            "unanswered": list(self.unanswered),
        }


def _error_json(error: GpunodeError) -> dict[str, Any]:
    """A step's error as stored (``StepError``): its code and English message, and its key
    and raw params when it is keyed (a presenter words it in its reader's language)."""
    out: dict[str, Any] = {"code": error.code, "message": error.message}
    if error.key:
        out |= {"key": error.key, "params": dict(error.params)}
    return out


def _failed_eviction(step: Step, err: GpunodeError) -> EvictionOutcome:
    """A pod whose eviction failed with ``err``: its English message, and its key and raw
    params for the reader's words."""
    return EvictionOutcome(
        namespace=step.ref.namespace,
        name=step.name,
        status="failed",
        reason=err.message,
        reason_key=err.key,
        reason_params=dict(err.params),
    )


def timed_out(step: Step, *, write: bool, eviction: bool = False) -> GpunodeError:
    """The error for ``step`` cut off after ``STEP_TIMEOUT_S``: for a real write, one that
    may still land (``WriteUnknownError``: re-read, never assume). Keyed ``step_unanswered``
    or ``step_timed_out`` with the step's verb, kind and target (``step``: its English
    label; an eviction's names no kind)."""
    target = f"{step.namespace + '/' if step.namespace else ''}{step.name}"
    kind = "" if eviction else step.kind
    what = f"{step.verb} {kind} {target}" if kind else f"{step.verb} {target}"
    label: dict[str, object] = {"step": what, "verb": step.verb, "kind": kind, "target": target}
    if write:
        return WriteUnknownError(
            f"{what}: the cluster did not answer within {STEP_TIMEOUT_S:g} s",
            waited_s=STEP_TIMEOUT_S,
            key="step_unanswered",
            params={**label, "waited_s": STEP_TIMEOUT_S},
        )
    return KubeUnavailableError(
        f"{what} did not answer in time; check the API server, then look at the object "
        "before retrying (the change may or may not have been made)",
        code="timeout",
        key="step_timed_out",
        params=label,
    )


async def _timed(
    step: Step, call: Awaitable[T], *, write: bool = False, eviction: bool = False
) -> T:
    try:
        async with asyncio.timeout(STEP_TIMEOUT_S):
            return await call
    except TimeoutError as exc:
        raise timed_out(step, write=write, eviction=eviction) from exc


async def _one(kube: KubePort, step: Step, *, dry_run: bool) -> Change:
    return await _timed(step, _call(kube, step, dry_run=dry_run), write=not dry_run)


async def _call(kube: KubePort, step: Step, *, dry_run: bool) -> Change:
    p = step.params
    if step.verb == "cordon":
        return await kube.cordon(step.name, dry_run=dry_run)
    if step.verb == "uncordon":
        return await kube.uncordon(step.name, dry_run=dry_run)
    if isinstance(p, AnnotateNodeParams):
        return await kube.annotate_node(step.name, dict(p.annotations), dry_run=dry_run)
    if isinstance(p, PriorityClassParams):
        return await kube.ensure_priority_class(
            step.name,
            p.value,
            description=p.description,
            dry_run=dry_run,
            preemption_policy=p.preemption_policy or "Never",
        )
    if isinstance(p, PriorityClassNameParams):
        return await kube.set_priority_class_name(
            step.kind, step.ref.namespace, step.name, p.priority_class, dry_run=dry_run
        )
    if isinstance(p, PatchResourcesParams):
        return await kube.patch_container_resources(
            step.kind,
            step.ref.namespace,
            step.name,
            p.container,
            requests=dict(p.requests),
            limits=dict(p.limits),
            env=dict(p.env),
            dry_run=dry_run,
        )
    if isinstance(p, ResizePodParams):
        return await kube.resize_pod(
            step.ref.namespace,
            step.name,
            p.container,
            requests=dict(p.requests),
            limits=dict(p.limits),
            dry_run=dry_run,
        )
    raise GpunodeError(f"unknown step verb {step.verb}; this is a bug in the plan")


def landed_reason(found: dict[str, Any]) -> str:
    """Why an eviction that got no answer counts as done (the eviction line shows it)."""
    seen = {"replaced": "replaced by a new pod"}.get(str(found["seen"]), str(found["seen"]))
    return (
        f"the cluster did not answer within {found['waited_s']:g} s; a re-read shows the pod {seen}"
    )


#: told of each real write that got no answer, before its object is re-read
OnUnanswered = Callable[[Step, WriteUnknownError], Awaitable[None]]


async def run_steps(
    kube: KubePort,
    steps: list[Step],
    *,
    dry_run: bool,
    on_unanswered: OnUnanswered | None = None,
) -> StepsResult:
    result = StepsResult()
    gate = asyncio.Semaphore(EVICTION_CONCURRENCY)

    async def evict(step: Step) -> EvictionOutcome:
        async with gate:
            sent_at = datetime.now(UTC)
            try:
                return await _timed(
                    step,
                    kube.evict(step.ref.namespace, step.name, dry_run=dry_run),
                    write=not dry_run,
                    eviction=True,
                )
            except WriteUnknownError as err:
                if on_unanswered is not None:
                    await on_unanswered(step, err)
                found = await settle(kube, step, err, sent_at=sent_at)
                result.unanswered.append(found.as_json())
                landed = found.landed
                if landed:
                    said = found.as_json()
                    return EvictionOutcome(
                        namespace=step.ref.namespace,
                        name=step.name,
                        status="evicted",
                        reason=landed_reason(said),
                        reason_key="eviction_landed",
                        reason_params={"seen": said["seen"], "waited_s": said["waited_s"]},
                    )
                return _failed_eviction(step, found.failure())
            except GpunodeError as err:
                return _failed_eviction(step, err)

    i = 0
    while i < len(steps):
        step = steps[i]
        if step.verb == "evict":
            batch = []
            while i < len(steps) and steps[i].verb == "evict":
                batch.append(steps[i])
                i += 1
            result.evictions.extend(await asyncio.gather(*(evict(s) for s in batch)))
            continue
        sent_at = datetime.now(UTC)
        try:
            result.changes.append(await _one(kube, step, dry_run=dry_run))
        except WriteUnknownError as err:
            if on_unanswered is not None:
                await on_unanswered(step, err)
            found = await settle(kube, step, err, sent_at=sent_at)
            result.unanswered.append(found.as_json())
            change = found.change
            if change is None:
                result.failed_step, result.error = step, found.failure()
                result.not_run = steps[i + 1 :]
                return result
            result.changes.append(change)  # it landed: done, and undone like any other
        except GpunodeError as err:
            result.failed_step, result.error = step, err
            result.not_run = steps[i + 1 :]
            return result
        i += 1
    return result
