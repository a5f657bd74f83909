"""Is a plan still safe to execute? Pure checks over the plan and a fresh re-read.

An action runs only against the world its evidence described. Before any effect, the
executor re-reads the node, its pods and every controller the plan patches, and asks
``stale_reason``; any answer but ``None`` refuses the action with that reason (shown to the
user as is, so it says what to do) and offers a re-diagnosis.

What counts as drift, per tier (compared with the cluster view stored with the evidence,
never with the plan's own assumptions):
- any tier: the evidence is older than ``max_age_s``;
- tier 1: the node was cordoned since (by someone else), or a pod to evict is gone;
- tier 2: a controller is gone, or its pod template's priority class changed;
- tier 3: the controller or the container is gone, or its memory/CPU limits changed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from bot.core.model.actions import ActionPlan, Step
from bot.core.model.cluster import ClusterView, ContainerInfo, PodInfo
from bot.core.model.quantity import QuantityError, parse_quantity

CONTROLLER_VERBS = ("set_priority_class", "patch_resources")


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


def _tier1(plan: ActionPlan, before: ClusterView, current: ClusterView) -> str | None:
    node = current.node
    if node.unschedulable and not before.node.unschedulable:
        return (
            f"node {node.name} was cordoned since the diagnosis (someone acted); "
            "re-diagnose before acting again"
        )
    present = {p.key for p in current.pods if not p.deleting}
    for step in plan.steps:
        key = f"{step.namespace}/{step.name}"
        if step.verb == "evict" and key not in present:
            return f"pod {key} is no longer on {node.name}; the plan is out of date, re-diagnose"
    return None


def _controller_drift(step: Step, controller: Mapping[str, Any], before: ClusterView) -> str | None:
    key = controller_key(step)
    if step.verb == "set_priority_class":
        was = {p.priority_class_name or None for p in _pods_of(before, step)}
        now = _template_spec(controller).get("priorityClassName") or None
        if was and now not in was:
            return (
                f"{key} now uses priority class {now or 'none'} (changed since the diagnosis); "
                "re-diagnose before acting"
            )
        return None
    name = step.container
    current = _template_container(controller, name)
    if current is None:
        return f"container {name} is gone from {key}; re-diagnose"
    seen = _container_before(before, step, name)
    if seen is None:
        return None  # nothing recorded to compare with (no pod of it was on the node)
    limits = dict((current.get("resources") or {}).get("limits") or {})
    if not _same_quantities(limits, seen.limits):
        shown = ", ".join(f"{k}={v}" for k, v in sorted(limits.items())) or "none"
        return f"{key} was changed since the diagnosis (limits now {shown}); re-diagnose first"
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
) -> str | None:
    """Why ``plan`` may not run now, or None. ``before`` is the view stored with the
    evidence, ``current`` a fresh read; ``controllers`` maps ``controller_key`` of every
    ``controller_steps`` step to its fresh object (None when it no longer exists)."""
    age = (now - evidence_at).total_seconds()
    if age > max_age_s:
        return (
            f"the evidence is {int(age // 60)} min old (limit {int(max_age_s // 60)} min); "
            "re-diagnose to act on current numbers"
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
            return f"pod {key} is no longer the one diagnosed; the plan is out of date, re-diagnose"
    for step in controller_steps(plan):
        obj = controllers.get(controller_key(step))
        if obj is None:
            return f"{controller_key(step)} no longer exists; the plan is out of date"
        drift = _controller_drift(step, obj, before)
        if drift:
            return drift
    return None


def undo_conflict(
    changes: Sequence[Mapping[str, Any]],
    *,
    node_unschedulable: bool | None,
    controllers: Mapping[str, Mapping[str, Any] | None],
) -> str | None:
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
                return (
                    f"node {c.get('name')} was {'cordoned' if node_unschedulable else 'uncordoned'}"
                    " by someone else since the action; nothing to undo there"
                )
            continue
        if verb not in ("set_priority_class", "patch_resources"):
            continue
        key = f"{c.get('kind')}/{c.get('namespace')}/{c.get('name')}"
        now = controllers.get(key)
        if now is None:
            return f"{key} no longer exists; there is nothing to restore"
        if verb == "set_priority_class":
            if _template_spec(now).get("priorityClassName") != after.get("priorityClassName"):
                return (
                    f"{key}'s priority class was changed again since the action; undo would "
                    "overwrite that change, so it is refused: restore it by hand if needed"
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
            return (
                f"{key} (container {container}) was changed again since the action; undo would "
                "overwrite that change, so it is refused: restore it by hand if needed"
            )
    return None
