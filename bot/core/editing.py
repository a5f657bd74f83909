"""Responder edits to a tier-3 plan, validated before anything is dry-run.

The confirmation modal shows the proposed caps and lets the responder change them. Edits are
checked here (pure): quantities must parse, a request may not exceed its limit, and a memory
limit below the container's current working set is refused unless the responder explicitly
acknowledges the immediate OOM kill it causes. Errors are keyed by the modal's block ids so
Slack can show them next to the field (``response_action: errors``).
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from bot.core.actions import ActionPlan, Step, Tier3Values
from bot.core.quantity import QuantityError, parse_quantity

MAX_OMP_THREADS = 1024  # far above any node's core count; catches typos like 40000


class Tier3Edits(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
    memory_limit: str
    memory_request: str
    cpu_limit: str | None = None
    cpu_request: str | None = None
    omp_num_threads: int | None = None
    accept_oom: bool = False


def _bytes(text: str, field: str, errors: dict[str, str]) -> int | None:
    try:
        q = parse_quantity(text.strip())
    except QuantityError:
        errors[field] = f"'{text}' is not a Kubernetes quantity; write e.g. 32Gi or 30720Mi"
        return None
    if q.value() <= 0:
        errors[field] = "must be greater than zero"
        return None
    return q.value()


def _cpu(text: str | None, field: str, errors: dict[str, str]) -> float | None:
    if text is None or not text.strip():
        return None
    try:
        q = parse_quantity(text.strip())
    except QuantityError:
        errors[field] = f"'{text}' is not a CPU quantity; write e.g. 8 or 7500m"
        return None
    if q.milli_value() <= 0:
        errors[field] = "must be greater than zero"
        return None
    return q.as_float()


def apply_tier3_edits(plan: ActionPlan, edits: Tier3Edits) -> ActionPlan | dict[str, str]:
    """The plan with the edited values, or ``{block_id: message}`` errors."""
    if plan.tier != 3 or plan.values is None:
        return {"memory_limit": "this plan has no editable caps"}
    errors: dict[str, str] = {}
    limit = _bytes(edits.memory_limit, "memory_limit", errors)
    request = _bytes(edits.memory_request, "memory_request", errors)
    cpu_lim = _cpu(edits.cpu_limit, "cpu_limit", errors)
    cpu_req = _cpu(edits.cpu_request, "cpu_request", errors)
    if limit is not None and request is not None and request > limit:
        errors["memory_request"] = "the request may not exceed the limit"
    if cpu_lim is not None and cpu_req is not None and cpu_req > cpu_lim:
        errors["cpu_request"] = "the request may not exceed the limit"
    threads = edits.omp_num_threads
    if threads is not None and not 1 <= threads <= MAX_OMP_THREADS:
        errors["omp_num_threads"] = f"use a whole number from 1 to {MAX_OMP_THREADS}"
    ws = plan.values.current_working_set_bytes
    below = limit is not None and ws is not None and limit < ws
    if below and not edits.accept_oom:
        errors["accept_oom"] = (
            "the limit is below the container's current working set: the kernel will OOM-kill "
            "it at once. Raise the limit, or tick the box to accept that."
        )
    if errors or limit is None:
        return errors
    values = Tier3Values(
        container=plan.values.container,
        memory_limit=edits.memory_limit.strip(),
        memory_request=edits.memory_request.strip(),
        cpu_limit=(edits.cpu_limit or "").strip() or None,
        cpu_request=(edits.cpu_request or "").strip() or None,
        omp_num_threads=threads,
        current_working_set_bytes=ws,
        memory_limit_bytes=limit,
        below_working_set=below,
    )
    steps = [
        _patch_step(s, values) if s.verb in ("patch_resources", "resize_pod") else s
        for s in plan.steps
    ]
    warnings = [w for w in plan.warnings if w != "immediate_oom"]
    if below:
        warnings.append("immediate_oom")
    return plan.model_copy(update={"values": values, "steps": steps, "warnings": warnings})


def _patch_step(step: Step, v: Tier3Values) -> Step:
    limits = {"memory": v.memory_limit}
    requests = {"memory": v.memory_request}
    if v.cpu_limit:
        limits["cpu"] = v.cpu_limit
    if v.cpu_request:
        requests["cpu"] = v.cpu_request
    params = {**step.params, "requests": requests, "limits": limits}
    if step.verb == "resize_pod":  # env cannot change in place
        return step.model_copy(update={"params": params})
    env = dict(step.params.get("env") or {})
    if v.omp_num_threads is not None:
        env["OMP_NUM_THREADS"] = str(v.omp_num_threads)
    else:
        env.pop("OMP_NUM_THREADS", None)
    params["env"] = env
    return step.model_copy(update={"params": params})
