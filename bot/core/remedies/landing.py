"""Did a write that got no answer land? Decided from the object as the API server has it now.

A write the client gave up on (a slow etcd, a cut connection) may have been applied. The
executor re-reads the step's object (``KubePort.read_target``) and asks ``landing``, which
compares what the step set out to write with what the object holds now:

- annotate_node: every scale-down annotation the step set (or removed) is as it wanted;
- cordon/uncordon: ``spec.unschedulable`` (the ``node.kubernetes.io/unschedulable`` taint,
  which the node lifecycle controller adds, is reported but does not decide);
- evict: the pod is gone, terminating (``deletionTimestamp``), or replaced by a pod of the
  same name created after the eviction was sent (a StatefulSet's);
- create a PriorityClass: it exists with the planned value;
- set a PriorityClass: the pod template's ``priorityClassName``;
- patch resources / resize in place: every resource and env value the patch set (quantities
  compared as quantities: ``32Gi`` equals ``34359738368``).

A single PATCH or POST is atomic, so a write landed whole or not at all. Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from bot.core.model.actions import (
    AnnotateNodeParams,
    PatchResourcesParams,
    PriorityClassNameParams,
    PriorityClassParams,
    ResizePodParams,
    Step,
)
from bot.core.model.quantity import QuantityError, parse_quantity

UNSCHEDULABLE_TAINT = "node.kubernetes.io/unschedulable"
#: what the re-read shows, per verb (words for it live in the templates)
Seen = Literal[
    "cordoned",
    "schedulable",
    "gone",
    "terminating",
    "replaced",
    "running",
    "present",
    "absent",
    "set",
    "not_set",
]


class Landing(BaseModel):
    """The answer of a re-read: ``landed`` and what the object shows (``seen``)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    landed: bool
    seen: Seen
    fields: list[str] = Field(
        default_factory=list,
        description="the fields the write set ('resources.limits.memory', 'unschedulable', "
        "'priorityClassName', 'env.OMP_NUM_THREADS'), for the message",
    )
    taint: bool | None = Field(None, description="cordon: the unschedulable taint is present")
    after: dict[str, Any] = Field(
        default_factory=dict,
        description="the re-read fields in a Change's ``after`` shape (what the thread shows)",
    )


def _same_quantity(now: Any, wanted: str) -> bool:
    if now is None:
        return False
    try:
        return parse_quantity(str(now)).cmp(parse_quantity(wanted)) == 0
    except QuantityError:
        return str(now) == wanted


def _pod_spec(obj: Mapping[str, Any], kind: str) -> Mapping[str, Any]:
    if kind == "Pod":
        return obj.get("spec") or {}
    return ((obj.get("spec") or {}).get("template") or {}).get("spec") or {}


def _container(spec: Mapping[str, Any], name: str) -> Mapping[str, Any] | None:
    for c in spec.get("containers") or []:
        if c.get("name") == name:
            return c  # type: ignore[no-any-return]
    return None


def _resources_landed(
    container: Mapping[str, Any] | None,
    requests: Mapping[str, str | None],
    limits: Mapping[str, str | None],
    env: Mapping[str, Any],
) -> bool:
    if container is None:
        return False
    resources = container.get("resources") or {}
    for section, wanted in (("requests", requests), ("limits", limits)):
        have = resources.get(section) or {}
        for key, value in wanted.items():
            if value is None:
                if key in have:
                    return False
            elif not _same_quantity(have.get(key), value):
                return False
    entries = {e.get("name"): e for e in container.get("env") or []}
    for name, value in env.items():
        entry = entries.get(name)
        if value is None:
            if entry is not None:
                return False
        elif isinstance(value, dict):
            if entry is None or {k: v for k, v in entry.items() if k != "name"} != {
                k: v for k, v in value.items() if k != "name"
            }:
                return False
        elif entry is None or entry.get("value") != value:
            return False
    return True


def _fields(
    requests: Mapping[str, Any], limits: Mapping[str, Any], env: Mapping[str, Any]
) -> list[str]:
    return [
        *(f"resources.limits.{k}" for k in limits),
        *(f"resources.requests.{k}" for k in requests),
        *(f"env.{k}" for k in env),
    ]


def _created_after(obj: Mapping[str, Any], sent_at: datetime) -> bool:
    raw = (obj.get("metadata") or {}).get("creationTimestamp")
    if not raw:
        return False
    try:
        created = datetime.fromisoformat(str(raw).replace("Z", "+00:00"))
    except ValueError:
        return False
    # creationTimestamp has whole seconds: a pod created in the second the eviction went
    # out counts as its replacement
    return created >= sent_at.replace(microsecond=0)


def landing(step: Step, obj: Mapping[str, Any] | None, *, sent_at: datetime) -> Landing:
    """Whether ``step``'s write is in ``obj`` (the object re-read after no answer came; None:
    it does not exist). ``sent_at``: when the write was sent (for a replaced pod)."""
    p = step.params
    if step.verb in ("cordon", "uncordon"):
        spec = (obj or {}).get("spec") or {}
        cordoned = bool(spec.get("unschedulable"))
        taint = any(t.get("key") == UNSCHEDULABLE_TAINT for t in spec.get("taints") or [])
        return Landing(
            landed=cordoned == (step.verb == "cordon"),
            seen="cordoned" if cordoned else "schedulable",
            fields=["unschedulable"],
            taint=taint,
            after={"unschedulable": cordoned},
        )
    if step.verb == "annotate_node" and isinstance(p, AnnotateNodeParams):
        now = ((obj or {}).get("metadata") or {}).get("annotations") or {}
        ok = all(now.get(k) == v for k, v in p.annotations.items())
        return Landing(
            landed=ok,
            seen="set" if ok else "not_set",
            fields=[f"annotations.{k}" for k in sorted(p.annotations)],
            after={"annotations": {k: now.get(k) for k in sorted(p.annotations)}},
        )
    if step.verb == "evict":
        if obj is None:
            return Landing(landed=True, seen="gone")
        if (obj.get("metadata") or {}).get("deletionTimestamp"):
            return Landing(landed=True, seen="terminating")
        if _created_after(obj, sent_at):
            return Landing(landed=True, seen="replaced")
        return Landing(landed=False, seen="running")
    if isinstance(p, PriorityClassParams):
        ok = obj is not None and int(obj.get("value") or 0) == p.value
        return Landing(
            landed=ok,
            seen="present" if obj is not None else "absent",
            after={"exists": obj is not None, "value": (obj or {}).get("value")},
        )
    if isinstance(p, PriorityClassNameParams):
        now = _pod_spec(obj or {}, step.kind).get("priorityClassName")
        return Landing(
            landed=obj is not None and now == p.priority_class,
            seen="set" if now else "not_set",
            fields=["priorityClassName"],
            after={"priorityClassName": now},
        )
    if isinstance(p, PatchResourcesParams | ResizePodParams):
        env = p.env if isinstance(p, PatchResourcesParams) else {}
        found = _container(_pod_spec(obj or {}, step.kind), p.container)
        ok = _resources_landed(found, p.requests, p.limits, env)
        return Landing(
            landed=ok,
            seen="set" if ok else "not_set",
            fields=_fields(p.requests, p.limits, env),
            after={"resources": dict((found or {}).get("resources") or {})},
        )
    raise ValueError(f"no re-read is known for a {step.verb} step; this is a bug in the plan")
