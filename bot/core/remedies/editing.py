"""Responder edits to a tier-3 plan, validated before anything is dry-run.

The confirmation modal shows the proposed caps and lets the responder change them. Edits are
checked here (pure): quantities must parse, a request may not exceed its limit, and a memory
limit below the container's current working set is refused unless the responder explicitly
acknowledges the immediate OOM kill it causes. Caps have upper bounds: the node's
allocatable memory and CPU (``Tier3Bounds``, from the evidence the plan was made from; a
container cannot be given more than the node offers), and in any case what a Kubernetes
quantity can hold (``Value()`` is an int64). Errors are keyed by the modal's block ids so
Slack can show them next to the field (``response_action: errors``) and name the bound.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from bot.core.model.actions import (
    ActionPlan,
    PatchResourcesParams,
    ResizePodParams,
    Step,
    Tier3Values,
)
from bot.core.model.quantity import MAX_INT64, Quantity, QuantityError, parse_quantity

MAX_OMP_THREADS = 1024  # far above any node's core count; catches typos like 40000
#: longer than any real quantity ("1099511627776Ki" is 15): refused before parsing
MAX_QUANTITY_CHARS = 64


class FieldError(str):
    """A form field's error: its English text (it is a ``str``: logs, tests, older readers)
    with ``key`` and raw ``params``, which a presenter words in the reader's language
    (``templates/slack/errors.j2``)."""

    key: str
    params: dict[str, object]

    def __new__(cls, text: str, key: str, **params: object) -> FieldError:
        made = super().__new__(cls, text)
        made.key = key
        made.params = params
        return made


class Tier3Bounds(BaseModel):
    """Upper bounds for the caps: the node's allocatable (None: unknown, only the int64
    bound of a Kubernetes quantity applies)."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    memory_bytes: int | None = None
    cpu_millis: int | None = None
    memory_text: str | None = Field(None, description="as the node reports it, for messages")
    cpu_text: str | None = None


class Tier3Edits(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
    memory_limit: str
    memory_request: str
    cpu_limit: str | None = None
    cpu_request: str | None = None
    omp_num_threads: int | None = None
    accept_oom: bool = False


def _quantity(
    text: str, field: str, kind: str, example: str, errors: dict[str, str]
) -> Quantity | None:
    raw = text.strip()
    if len(raw) > MAX_QUANTITY_CHARS:
        errors[field] = FieldError(
            f"too long for a quantity (at most {MAX_QUANTITY_CHARS} characters)",
            "field_quantity_too_long",
            limit=MAX_QUANTITY_CHARS,
        )
        return None
    try:
        return parse_quantity(raw)
    except QuantityError:
        shown = raw if raw.isprintable() else repr(raw)
        errors[field] = FieldError(
            f"'{shown}' is not {kind}; write e.g. {example}",
            "field_not_quantity" if kind == "a Kubernetes quantity" else "field_not_cpu",
            value=shown,
        )
        return None


def _bytes(
    text: str, field: str, errors: dict[str, str], *, bound: int | None, bound_text: str | None
) -> int | None:
    q = _quantity(text, field, "a Kubernetes quantity", "32Gi or 30720Mi", errors)
    if q is None:
        return None
    if q.value() <= 0:
        errors[field] = FieldError("must be greater than zero", "field_not_positive")
        return None
    if bound is not None and q.value() > bound:
        shown = bound_text or str(bound)
        errors[field] = FieldError(
            f"must be at most {shown}, the node's allocatable memory",
            "field_above_memory",
            bound=shown,
        )
        return None
    if q.value() > MAX_INT64:
        errors[field] = FieldError(
            f"must be at most {MAX_INT64} bytes, the largest Kubernetes quantity",
            "field_above_int64",
            bound=MAX_INT64,
        )
        return None
    return q.value()


def _cpu(
    text: str | None,
    field: str,
    errors: dict[str, str],
    *,
    bound: int | None,
    bound_text: str | None,
) -> float | None:
    if text is None or not text.strip():
        return None
    q = _quantity(text, field, "a CPU quantity", "8 or 7500m", errors)
    if q is None:
        return None
    if q.milli_value() <= 0:
        errors[field] = FieldError("must be greater than zero", "field_not_positive")
        return None
    if bound is not None and q.milli_value() > bound:
        shown = bound_text or f"{bound}m"
        errors[field] = FieldError(
            f"must be at most {shown}, the node's allocatable CPU", "field_above_cpu", bound=shown
        )
        return None
    if q.milli_value() > MAX_INT64:
        errors[field] = FieldError(
            f"must be at most {MAX_INT64}m, the largest Kubernetes CPU quantity",
            "field_above_int64_cpu",
            bound=MAX_INT64,
        )
        return None
    return q.as_float()


def apply_tier3_edits(
    plan: ActionPlan, edits: Tier3Edits, *, bounds: Tier3Bounds | None = None
) -> ActionPlan | dict[str, str]:
    """The plan with the edited values, or ``{block_id: message}`` errors."""
    if plan.tier != 3 or plan.values is None:
        return {"memory_limit": FieldError("this plan has no editable caps", "field_no_caps")}
    b = bounds or Tier3Bounds()
    errors: dict[str, str] = {}
    mem_bound, mem_text = b.memory_bytes, b.memory_text
    limit = _bytes(edits.memory_limit, "memory_limit", errors, bound=mem_bound, bound_text=mem_text)
    request = _bytes(
        edits.memory_request, "memory_request", errors, bound=mem_bound, bound_text=mem_text
    )
    cpu_lim = _cpu(edits.cpu_limit, "cpu_limit", errors, bound=b.cpu_millis, bound_text=b.cpu_text)
    cpu_req = _cpu(
        edits.cpu_request, "cpu_request", errors, bound=b.cpu_millis, bound_text=b.cpu_text
    )
    if limit is not None and request is not None and request > limit:
        errors["memory_request"] = FieldError(
            "the request may not exceed the limit", "field_request_above_limit"
        )
    if cpu_lim is not None and cpu_req is not None and cpu_req > cpu_lim:
        errors["cpu_request"] = FieldError(
            "the request may not exceed the limit", "field_request_above_limit"
        )
    threads = edits.omp_num_threads
    if threads is not None and not 1 <= threads <= MAX_OMP_THREADS:
        errors["omp_num_threads"] = FieldError(
            f"use a whole number from 1 to {MAX_OMP_THREADS}",
            "field_threads_range",
            limit=MAX_OMP_THREADS,
        )
    ws = plan.values.current_working_set_bytes
    below = limit is not None and ws is not None and limit < ws
    if below and not edits.accept_oom:
        errors["accept_oom"] = FieldError(
            "the limit is below the container's current working set: the kernel will OOM-kill "
            "it at once. Raise the limit, or tick the box to accept that.",
            "field_below_working_set",
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
    p = step.params
    if isinstance(p, ResizePodParams):  # env cannot change in place
        resized = p.model_copy(update={"requests": requests, "limits": limits})
        return step.model_copy(update={"params": resized})
    if not isinstance(p, PatchResourcesParams):
        return step
    env = dict(p.env)
    if v.omp_num_threads is not None:
        env["OMP_NUM_THREADS"] = str(v.omp_num_threads)
    else:
        env.pop("OMP_NUM_THREADS", None)
    patched = p.model_copy(update={"requests": requests, "limits": limits, "env": env})
    return step.model_copy(update={"params": patched})
