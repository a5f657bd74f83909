"""Is a plan still safe to execute? Pure checks over the plan and a fresh re-read.

An action runs only against the world its evidence described. Before any effect, the
executor re-reads the node, its pods and every controller the plan patches, and asks
``stale_reason``; any answer but ``None`` refuses the action with that reason and offers a
re-diagnosis. A reason is a ``Why``: a code with raw parameters, which a presenter words in
the reader's language (``templates/slack/refusals.j2``: ``plan_stale``, ``undo_conflict``), and
its English text for the audit row and the logs; each says what to do.

What counts as drift, per tier (compared with the cluster view stored with the evidence,
never with the plan's own assumptions):
- any tier: the evidence is older than ``max_age_s``;
- tier 1: the node was cordoned since (by someone else), or a pod to evict is gone;
- tier 2: a controller is gone, or its pod template's priority class changed;
- tier 3: the controller or the container is gone, or its memory/CPU limits changed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from bot.core.model.actions import ActionPlan, Step
from bot.core.model.cluster import ClusterView, ContainerInfo, PodInfo
from bot.core.model.quantity import QuantityError, parse_quantity

CONTROLLER_VERBS = ("set_priority_class", "patch_resources")
#: why a plan is stale (``stale_reason``; the services add the first three)
STALE_REASONS = frozenset(
    {
        "no_evidence",  # no evidence recorded for the incident
        "no_view",  # no cluster view recorded with it
        "node_gone",  # {node}
        "evidence_old",  # {age_min, limit_min}
        "node_cordoned",  # {node}: cordoned by someone since the diagnosis
        "pod_gone",  # {pod, node}: a pod to evict is no longer on the node
        "pod_replaced",  # {pod}: the pod to resize is not the one diagnosed
        "target_gone",  # {target}: a controller to patch no longer exists
        "priority_changed",  # {target, now}: its priority class changed since
        "container_gone",  # {target, container}
        "limits_changed",  # {target, limits}: its limits changed since
    }
)
#: why Undo would overwrite someone else's change (``undo_conflict``)
UNDO_CONFLICTS = frozenset(
    {
        "node_changed",  # {node, cordoned}: cordoned/uncordoned by someone else since
        "target_gone",  # {target}: nothing left to restore
        "priority_changed",  # {target}
        "resources_changed",  # {target, container}
    }
)


@dataclass(frozen=True)
class Why:
    """Why not: ``reason`` (one of ``STALE_REASONS`` or ``UNDO_CONFLICTS``) with raw
    ``params`` for a presenter to word, and ``text``, the same in English (audit, logs)."""

    reason: str
    text: str
    params: Mapping[str, str | int | bool] = field(default_factory=dict)


def controller_key(step: Step) -> str:
    """``Kind/namespace/name``, the key of ``controllers`` in ``stale_reason``."""
    return step.ref.key


def controller_steps(plan: ActionPlan) -> list[Step]:
    """The steps that patch a controller (whose current object must be re-read)."""
    return [s for s in plan.steps if s.verb in CONTROLLER_VERBS]


def _template_spec(controller: Mapping[str, Any]) -> dict[str, Any]:
    spec = (controller.get("spec") or {}).get("template", {}).get("spec", {})
    return dict(spec or {})


def _template_container(controller: Mapping[str, Any], name: str) -> dict[str, Any] | None:
    for c in _template_spec(controller).get("containers", []) or []:
        if c.get("name") == name:
            return dict(c)
    return None


def _pods_of(view: ClusterView, step: Step) -> list[PodInfo]:
    out = []
    for pod in view.pods:
        top = pod.top_owner
        if (
            pod.namespace == step.namespace
            and top
            and (top.kind, top.name) == (step.kind, step.name)
        ):
            out.append(pod)
    return out


def _container_before(view: ClusterView, step: Step, name: str) -> ContainerInfo | None:
    for pod in _pods_of(view, step):
        for c in pod.containers:
            if c.name == name:
                return c
    return None


def _same_quantities(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    """Equal as quantities ("64Gi" == "65536Mi"); unparsable text compares as text."""
    if set(a) != set(b):
        return False
    for key, value in a.items():
        try:
            if (
                parse_quantity(str(value)).milli_value()
                != parse_quantity(str(b[key])).milli_value()
            ):
                return False
        except QuantityError:
            if str(value) != str(b[key]):
                return False
    return True


def _tier1(plan: ActionPlan, before: ClusterView, current: ClusterView) -> Why | None:
    node = current.node
    if node.unschedulable and not before.node.unschedulable:
        return Why(
            "node_cordoned",
            f"node {node.name} was cordoned since the diagnosis (someone acted); "
            "re-diagnose before acting again",
            {"node": node.name},
        )
    present = {p.key for p in current.pods if not p.deleting}
    for step in plan.steps:
        key = f"{step.namespace}/{step.name}"
        if step.verb == "evict" and key not in present:
            return Why(
                "pod_gone",
                f"pod {key} is no longer on {node.name}; the plan is out of date, re-diagnose",
                {"pod": key, "node": node.name},
            )
    return None


def _controller_drift(step: Step, controller: Mapping[str, Any], before: ClusterView) -> Why | None:
    key = controller_key(step)
    if step.verb == "set_priority_class":
        was = {p.priority_class_name or None for p in _pods_of(before, step)}
        now = _template_spec(controller).get("priorityClassName") or None
        if was and now not in was:
            return Why(
                "priority_changed",
                f"{key} now uses priority class {now or 'none'} (changed since the diagnosis); "
                "re-diagnose before acting",
                {"target": key, "now": now or ""},
            )
        return None
    name = step.container
    current = _template_container(controller, name)
    if current is None:
        return Why(
            "container_gone",
            f"container {name} is gone from {key}; re-diagnose",
            {"target": key, "container": name},
        )
    seen = _container_before(before, step, name)
    if seen is None:
        return None  # nothing recorded to compare with (no pod of it was on the node)
    limits = dict((current.get("resources") or {}).get("limits") or {})
    if not _same_quantities(limits, seen.limits):
        shown = ", ".join(f"{k}={v}" for k, v in sorted(limits.items()))
        return Why(
            "limits_changed",
            f"{key} was changed since the diagnosis (limits now {shown or 'none'}); "
            "re-diagnose first",
            {"target": key, "limits": shown},
        )
    return None


def stale_reason(
    plan: ActionPlan,
    *,
    evidence_at: datetime,
    now: datetime,
    max_age_s: float,
    before: ClusterView,
    current: ClusterView,
    controllers: Mapping[str, Mapping[str, Any] | None],
) -> Why | None:
    """Why ``plan`` may not run now, or None. ``before`` is the view stored with the
    evidence, ``current`` a fresh read; ``controllers`` maps ``controller_key`` of every
    ``controller_steps`` step to its fresh object (None when it no longer exists)."""
    age = (now - evidence_at).total_seconds()
    if age > max_age_s:
        old, limit = int(age // 60), int(max_age_s // 60)
        return Why(
            "evidence_old",
            f"the evidence is {old} min old (limit {limit} min); "
            "re-diagnose to act on current numbers",
            {"age_min": old, "limit_min": limit},
        )
    if plan.tier == 1:
        return _tier1(plan, before, current)
    for step in plan.steps:  # an in-place resize acts on that very pod
        if step.verb != "resize_pod":
            continue
        key = f"{step.namespace}/{step.name}"
        was = next((p for p in before.pods if p.key == key), None)
        now_pod = next((p for p in current.pods if p.key == key and not p.deleting), None)
        if now_pod is None or (was is not None and was.uid != now_pod.uid):
            return Why(
                "pod_replaced",
                f"pod {key} is no longer the one diagnosed; the plan is out of date, re-diagnose",
                {"pod": key},
            )
    for step in controller_steps(plan):
        obj = controllers.get(controller_key(step))
        if obj is None:
            target = controller_key(step)
            return Why(
                "target_gone",
                f"{target} no longer exists; the plan is out of date",
                {"target": target},
            )
        drift = _controller_drift(step, obj, before)
        if drift:
            return drift
    return None


def undo_conflict(
    changes: Sequence[Mapping[str, Any]],
    *,
    node_unschedulable: bool | None,
    controllers: Mapping[str, Mapping[str, Any] | None],
) -> Why | None:
    """Why Undo must not run now, or None: someone changed a target after our action.

    ``changes`` are the action's recorded ``Change`` dicts (``after`` = what the server
    answered); ``controllers`` maps "Kind/namespace/name" to the object as it is now (None
    if gone); ``node_unschedulable`` is the node's current flag. Undo restores the
    before-state only where the object still holds exactly what the action left, so it never
    overwrites a later hand edit or another action.
    """
    for c in changes:
        if c.get("noop") or c.get("dry_run"):
            continue
        verb, after = c.get("verb"), c.get("after") or {}
        if verb in ("cordon", "uncordon"):
            if node_unschedulable is not None and node_unschedulable != after.get("unschedulable"):
                return Why(
                    "node_changed",
                    f"node {c.get('name')} was {'cordoned' if node_unschedulable else 'uncordoned'}"
                    " by someone else since the action; nothing to undo there",
                    {"node": str(c.get("name")), "cordoned": bool(node_unschedulable)},
                )
            continue
        if verb not in ("set_priority_class", "patch_resources"):
            continue
        key = f"{c.get('kind')}/{c.get('namespace')}/{c.get('name')}"
        now = controllers.get(key)
        if now is None:
            return Why(
                "target_gone",
                f"{key} no longer exists; there is nothing to restore",
                {"target": key},
            )
        if verb == "set_priority_class":
            if _template_spec(now).get("priorityClassName") != after.get("priorityClassName"):
                return Why(
                    "priority_changed",
                    f"{key}'s priority class was changed again since the action; undo would "
                    "overwrite that change, so it is refused: restore it by hand if needed",
                    {"target": key},
                )
            continue
        container = str((c.get("before") or {}).get("container", ""))
        current = _template_container(now, container) or {}
        res_now, res_after = current.get("resources") or {}, after.get("resources") or {}
        same = all(
            _same_quantities(res_now.get(part) or {}, res_after.get(part) or {})
            for part in ("requests", "limits")
        )
        if not same:
            return Why(
                "resources_changed",
                f"{key} (container {container}) was changed again since the action; undo would "
                "overwrite that change, so it is refused: restore it by hand if needed",
                {"target": key, "container": container},
            )
    return None
