"""A pod's ``PodRequests``/``PodLimits``, as kubectl and the scheduler sum them (the rules in
``bot.core.diagnosis.allocation``'s docstring). Pure.

Apart from ``allocation`` (kubectl's rows, which are models) so that what cuts a list page to
slim records (``bot.kube.cutting``, in the page decoder's process) imports no model: the
decoder holds only what it runs (pydantic and the core's models are ~20 MiB of its resident
memory, counted in the bot's process tree, issue #25).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from bot.core.model.quantity import Quantity, parse_quantity

ResourceList = dict[str, Quantity]

HUGEPAGES_PREFIX = "hugepages-"
TERMINAL_PHASES = frozenset({"Succeeded", "Failed"})


def parse_resource_list(raw: Mapping[str, Any] | None) -> ResourceList:
    return {name: parse_quantity(value) for name, value in (raw or {}).items()}


def _add(into: ResourceList, new: Mapping[str, Quantity]) -> None:
    """``addResourceList``: copy the first value seen, add later ones."""
    for name, quantity in new.items():
        into[name] = into[name].add(quantity) if name in into else quantity


def add_resource_list(into: ResourceList, new: Mapping[str, Quantity]) -> None:
    """``addResourceList`` into ``into`` (for totals summed a page at a time)."""
    _add(into, new)


def _max(into: ResourceList, new: Mapping[str, Quantity]) -> None:
    """``maxResourceList``: replace only when absent or strictly greater."""
    for name, quantity in new.items():
        if name not in into or quantity.cmp(into[name]) > 0:
            into[name] = quantity


def _maximum(first: ResourceList | None, *others: ResourceList | None) -> ResourceList:
    result = dict(first or {})
    for other in others:
        _max(result, other or {})
    return result


def _resize_infeasible(pod: Mapping[str, Any]) -> bool:
    for cond in pod.get("status", {}).get("conditions") or []:
        if cond.get("type") == "PodResizePending":
            return bool(cond.get("reason") == "Infeasible")
    return False


def _statuses(pod: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    status = pod.get("status") or {}
    found: dict[str, Mapping[str, Any]] = {}
    for key in ("initContainerStatuses", "containerStatuses"):
        for cs in status.get(key) or []:
            found.setdefault(cs.get("name", ""), cs)
    return found


def _is_sidecar(container: Mapping[str, Any]) -> bool:
    return container.get("restartPolicy") == "Always"


def _aggregate(pod: Mapping[str, Any], pick: Any) -> ResourceList:
    """``aggregateContainerResourcesByFn``: containers summed, init containers maxed."""
    spec = pod.get("spec") or {}
    result: ResourceList = {}
    for container in spec.get("containers") or []:
        _add(result, pick(container))
    sidecars: ResourceList = {}
    init_max: ResourceList = {}
    for container in spec.get("initContainers") or []:
        own = pick(container)
        if _is_sidecar(container):
            _add(result, own)
            _add(sidecars, own)
            use = dict(sidecars)
        else:
            use = dict(own)
            _add(use, sidecars)
        _max(init_max, use)
    _max(result, init_max)
    return result


def _resources(container: Mapping[str, Any], key: str) -> ResourceList:
    return parse_resource_list((container.get("resources") or {}).get(key))


def _container_requests(pod: Mapping[str, Any], use_status: bool) -> ResourceList:
    def spec_reqs(c: Mapping[str, Any]) -> ResourceList:
        return _resources(c, "requests")

    if not use_status:
        return _aggregate(pod, spec_reqs)
    statuses = _statuses(pod)
    infeasible = _resize_infeasible(pod)

    def allocated(c: Mapping[str, Any]) -> ResourceList:
        cs = statuses.get(c.get("name", ""))
        if cs is not None and cs.get("allocatedResources") is not None:
            return parse_resource_list(cs["allocatedResources"])
        return {} if infeasible else spec_reqs(c)

    def actuated(c: Mapping[str, Any]) -> ResourceList:
        cs = statuses.get(c.get("name", ""))
        if cs is not None and (cs.get("resources") or {}).get("requests") is not None:
            return parse_resource_list(cs["resources"]["requests"])
        return allocated(c)

    allocated_sum, actuated_sum = _aggregate(pod, allocated), _aggregate(pod, actuated)
    if infeasible:
        return _maximum(actuated_sum, allocated_sum)
    return _maximum(_aggregate(pod, spec_reqs), actuated_sum, allocated_sum)


def _container_limits(pod: Mapping[str, Any], use_status: bool) -> ResourceList:
    def spec_lims(c: Mapping[str, Any]) -> ResourceList:
        return _resources(c, "limits")

    if not use_status:
        return _aggregate(pod, spec_lims)
    statuses = _statuses(pod)
    infeasible = _resize_infeasible(pod)

    def actuated(c: Mapping[str, Any]) -> ResourceList:
        cs = statuses.get(c.get("name", ""))
        if cs is not None and (cs.get("resources") or {}).get("limits") is not None:
            return parse_resource_list(cs["resources"]["limits"])
        return {} if infeasible else spec_lims(c)

    actuated_sum = _aggregate(pod, actuated)
    if infeasible:
        return actuated_sum
    return _maximum(_aggregate(pod, spec_lims), actuated_sum)


def _pod_level_supported(name: str) -> bool:
    return name in ("cpu", "memory") or name.startswith(HUGEPAGES_PREFIX)


def _pod_level(pod: Mapping[str, Any], key: str) -> ResourceList:
    return parse_resource_list(((pod.get("spec") or {}).get("resources") or {}).get(key))


def pod_requests_and_limits(
    pod: Mapping[str, Any], *, use_status_resources: bool = False
) -> tuple[ResourceList, ResourceList]:
    """``PodRequests``/``PodLimits`` with pod-level resources and overhead.

    ``use_status_resources`` gives kubectl's per-pod rows (max of spec, allocated and
    actuated); the Allocated-resources totals use spec only (the default).
    """
    overhead = parse_resource_list((pod.get("spec") or {}).get("overhead"))
    reqs = _container_requests(pod, use_status_resources)
    pod_reqs, pod_lims = _pod_level(pod, "requests"), _pod_level(pod, "limits")
    if any(_pod_level_supported(n) for n in pod_reqs):
        reqs.update({n: q for n, q in pod_reqs.items() if _pod_level_supported(n)})
    _add(reqs, overhead)

    lims = _container_limits(pod, use_status_resources)
    if any(_pod_level_supported(n) for n in (*pod_reqs, *pod_lims)):
        lims.update({n: q for n, q in pod_lims.items() if _pod_level_supported(n)})
    for name, quantity in overhead.items():
        if name in lims and not lims[name].is_zero():
            lims[name] = lims[name].add(quantity)
    return reqs, lims
