"""Tier 3 in place: resize the offending pod through ``pods/<name>/resize``. Pure: no I/O.

In-place resize (KEP-1287; reference kubernetes.md section 3) changes a running container's
cpu/memory without recreating the pod, so its emptyDir data and GPU state survive. gpunode
uses it where the server serves the subresource (discovery lists ``pods/resize``: 1.33+) and
the change is allowed in place:

- only cpu and memory change, and the pod's QoS class must stay the same;
- a non-sidecar init container cannot be resized;
- lowering the memory limit (setting one where there was none lowers it too): on 1.33 only
  when the container's memory ``resizePolicy`` is ``RestartContainer`` (the container
  restarts; the pod and its emptyDirs stay); from 1.34 the kubelet does it best effort: it
  does not lower a limit below what the container uses, so a limit under the working set
  goes through the template (a restart) unless the policy is
  ``RestartContainer``.

Otherwise the plan falls back to the controller template (a rollout: pods are recreated and
emptyDir data is lost, warning ``emptydir_lost_on_restart``). An in-place resize leaves the
template as it was: a pod the controller creates later starts with the old values, and
``OMP_NUM_THREADS`` (env) cannot change in place; both are stated (``in_place_only_this_pod``).
"""

from __future__ import annotations

import re

from bot.core.model.actions import ActionPlan, PatchResourcesParams, ResizePodParams, Step
from bot.core.model.changes import ResourceValues
from bot.core.model.cluster import ClusterView, ContainerInfo, PodInfo
from bot.core.model.plans import make_plan
from bot.core.model.quantity import quantity_value


def minor_version(version: str | None) -> int | None:
    m = re.match(r"v?1\.(\d+)", version or "")
    return int(m.group(1)) if m else None


def _qos(containers: list[ContainerInfo]) -> str:
    """Guaranteed / Burstable / BestEffort from cpu and memory of regular containers."""
    any_set, guaranteed = False, True
    for c in containers:
        for r in ("cpu", "memory"):
            req, lim = c.requests.get(r), c.limits.get(r)
            any_set = any_set or req is not None or lim is not None
            if lim is None or (req is not None and req != lim):
                guaranteed = False
    if not any_set:
        return "besteffort"
    return "guaranteed" if guaranteed else "burstable"


def _merged(old: dict[str, str], new: ResourceValues) -> dict[str, str]:
    """A strategic merge of one resources section: a None value removes the key."""
    out = dict(old)
    for k, v in new.items():
        if v is None:
            out.pop(k, None)
        else:
            out[k] = v
    return out


def _resized(c: ContainerInfo, requests: ResourceValues, limits: ResourceValues) -> ContainerInfo:
    return c.model_copy(
        update={"requests": _merged(c.requests, requests), "limits": _merged(c.limits, limits)}
    )


def in_place_refusal(
    view: ClusterView, pod: PodInfo, step: Step, *, below_usage: bool = False
) -> str | None:
    """Why ``step`` (a template ``patch_resources``) cannot be done in place, or None.
    ``below_usage``: the new memory limit is under the container's working set."""
    if not view.in_place_resize:
        return "resize_not_served"
    p = step.params
    if not isinstance(p, PatchResourcesParams | ResizePodParams):
        return "resize_not_served"
    name = p.container
    info = next((c for c in pod.containers if c.name == name), None)
    if info is None or (info.init and not info.sidecar):
        return "resize_not_served"
    requests, limits = dict(p.requests), dict(p.limits)
    regular = [c for c in pod.containers if not c.init]
    after = [_resized(c, requests, limits) if c.name == name else c for c in regular]
    if _qos(after) != _qos(regular):
        return "resize_changes_qos"
    old, new = quantity_value(info.limits.get("memory")), quantity_value(limits.get("memory"))
    # no limit is no bound (the node's allocatable): setting one lowers it
    lowering = new is not None and (old is None or new < old)
    minor = minor_version(view.server_version)
    restarts = info.memory_resize_policy == "RestartContainer"
    if lowering and minor == 33 and not restarts:
        return "resize_memory_decrease_needs_restart_policy"
    if lowering and below_usage and not restarts:
        # the kubelet only lowers a limit the container is under: it would stay pending
        return "resize_below_usage"
    return None


def in_place_plan(view: ClusterView, pod: PodInfo, template: ActionPlan) -> ActionPlan | None:
    """The tier 3 plan as an in-place resize of ``pod``, or None to keep ``template``."""
    step = template.steps[0] if template.steps else None
    if step is None or step.verb != "patch_resources":
        return None
    below = template.values is not None and template.values.below_working_set
    if in_place_refusal(view, pod, step, below_usage=below) is not None:
        return None
    p = step.params
    if not isinstance(p, PatchResourcesParams):
        return None
    name = p.container
    info = next(c for c in pod.containers if c.name == name)
    resize = Step(
        verb="resize_pod",
        kind="Pod",
        namespace=pod.namespace,
        name=pod.name,
        params=ResizePodParams(container=name, requests=dict(p.requests), limits=dict(p.limits)),
    )
    restarts_container = info.memory_resize_policy == "RestartContainer"
    warnings = [w for w in template.warnings if w not in ("template_change_restarts_pods",)] + [
        "in_place_only_this_pod"
    ]
    if restarts_container:
        warnings.append("in_place_container_restarts")
    elif minor_version(view.server_version) not in (None, 33):
        warnings.append("in_place_best_effort")
    values = template.values
    if values is not None:
        values = values.model_copy(update={"omp_num_threads": None})
    return make_plan(
        view.node.name,
        3,
        [resize],
        target=f"Pod/{pod.key}",
        blast_radius=[pod.key],
        restarts=[pod.key] if restarts_container else [],
        reversible=True,
        values=values,
        warnings=warnings,
        notes=[n for n in template.notes if n.code == "vpa_reverts"],
    )
