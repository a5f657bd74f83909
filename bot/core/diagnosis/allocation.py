"""kubectl-identical "Allocated resources" arithmetic (``kubectl describe node``, 1.36+).

Inputs are API JSON (``kubectl get -o json`` shapes): a node dict and pod dicts. Pure.

Rules (reference/kubernetes.md §1.1-1.5, component-helpers ``resource/helpers.go``):

- Pods counted: bound to the node (``spec.nodeName``) and not in phase Succeeded/Failed.
- Per pod: regular containers are summed; init containers in order, a sidecar
  (``restartPolicy: Always``) is added to the sum and to a running sidecar total, a regular
  init container needs its own value plus the sidecars before it; pod = max(sum, init max).
  Pod-level ``spec.resources`` (cpu, memory, hugepages-*) replaces the aggregate; overhead is
  added to every request and only to existing non-zero limits. Missing limits add nothing.
- Totals (spec only) sum pods in list order; a total keeps the format of the first quantity
  seen, ``max`` replaces a value (and its format) only when strictly greater.
- Percentages are ``int(x / allocatable * 100)`` in float64 against Allocatable (Capacity if
  Allocatable is empty); cpu uses milli-values, everything else values; 0 when allocatable is 0.
- Rows: cpu, memory, ephemeral-storage always; hugepages-* then extended resources from
  allocatable, sorted; extended rows carry no percentage; ``pods`` is never printed.

Pods read from the API are already defaulted (request = limit when only a limit is set); use
``apply_pod_defaults`` first for raw manifests.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping
from typing import Any, NamedTuple

from bot.core.model.cluster import ResourceAllocation
from bot.core.model.quantity import Quantity, parse_quantity

ResourceList = dict[str, Quantity]

STANDARD_ROWS = ("cpu", "memory", "ephemeral-storage")
HUGEPAGES_PREFIX = "hugepages-"
TERMINAL_PHASES = frozenset({"Succeeded", "Failed"})
# Go's int64(float64) on amd64 turns NaN/Inf into the "integer indefinite" value; kubectl's
# per-pod rows have no zero guard, so a zero allocatable prints this number.
_GO_INT64_INDEFINITE = -(2**63)

HEADER = "Allocated resources:\n  (Total limits may be over 100 percent, i.e., overcommitted.)\n"


class PodRow(NamedTuple):
    """One row of kubectl's "Non-terminated Pods" table (without the Age column)."""

    namespace: str
    name: str
    cpu_requests: str
    cpu_limits: str
    memory_requests: str
    memory_limits: str


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


def apply_pod_defaults(pod: Mapping[str, Any]) -> dict[str, Any]:
    """``SetDefaults_Pod`` for raw manifests: a container's missing request defaults to its
    limit, per resource, for containers and init containers. Returns a new dict."""
    out: dict[str, Any] = copy.deepcopy(dict(pod))
    spec = out.get("spec") or {}
    for key in ("containers", "initContainers"):
        for container in spec.get(key) or []:
            resources = container.get("resources") or {}
            limits = resources.get("limits") or {}
            if not limits:
                continue
            requests = dict(resources.get("requests") or {})
            for name, value in limits.items():
                requests.setdefault(name, value)
            resources["requests"] = requests
            container["resources"] = resources
    return out


def counted_pods(node: Mapping[str, Any], pods: Iterable[Mapping[str, Any]]) -> list[Any]:
    """The pods kubectl lists: bound to the node and not Succeeded/Failed, in input order."""
    name = (node.get("metadata") or {}).get("name")
    return [
        p
        for p in pods
        if (p.get("spec") or {}).get("nodeName") == name
        and (p.get("status") or {}).get("phase") not in TERMINAL_PHASES
    ]


def node_allocatable(node: Mapping[str, Any]) -> ResourceList:
    status = node.get("status") or {}
    return parse_resource_list(status.get("allocatable") or status.get("capacity"))


def totals(pods: Iterable[Mapping[str, Any]]) -> tuple[ResourceList, ResourceList]:
    """``getPodsTotalRequestsAndLimits`` over already-filtered pods (spec only)."""
    reqs: ResourceList = {}
    lims: ResourceList = {}
    for pod in pods:
        pod_reqs, pod_lims = pod_requests_and_limits(pod)
        _add(reqs, pod_reqs)
        _add(lims, pod_lims)
    return reqs, lims


def _scalar(resource: str, quantity: Quantity) -> int:
    return quantity.milli_value() if resource == "cpu" else quantity.value()


def _percent(resource: str, used: Quantity, allocatable: Quantity, *, guard: bool) -> int:
    denominator = _scalar(resource, allocatable)
    if denominator == 0:
        if guard:
            return 0
        return _GO_INT64_INDEFINITE
    return int(float(_scalar(resource, used)) / float(denominator) * 100)


def _row_resources(allocatable: Mapping[str, Quantity]) -> list[tuple[str, bool]]:
    hugepages = sorted(n for n in allocatable if n.startswith(HUGEPAGES_PREFIX))
    extended = sorted(
        n
        for n in allocatable
        if n not in STANDARD_ROWS and n != "pods" and not n.startswith(HUGEPAGES_PREFIX)
    )
    rows = [(n, True) for n in (*STANDARD_ROWS, *hugepages)]
    return rows + [(n, False) for n in extended]


def allocated_resources(
    node: Mapping[str, Any], pods: Iterable[Mapping[str, Any]]
) -> list[ResourceAllocation]:
    """The rows of "Allocated resources", with the numbers behind each.

    ``*_value`` fields are in the resource's unit (cores for cpu, bytes for memory).
    """
    reqs, lims = totals(counted_pods(node, pods))
    return allocation_rows(node_allocatable(node), reqs, lims)


def allocation_rows(
    allocatable: Mapping[str, Quantity], reqs: Mapping[str, Quantity], lims: Mapping[str, Quantity]
) -> list[ResourceAllocation]:
    """The rows of "Allocated resources" from totals already summed (``totals`` over the
    node's counted pods): a fleet read sums each page's pods as it goes and keeps only this."""
    rows: list[ResourceAllocation] = []
    zero = Quantity()
    for resource, with_percent in _row_resources(allocatable):
        req, lim = reqs.get(resource, zero), lims.get(resource, zero)
        alloc = allocatable.get(resource)
        rows.append(
            ResourceAllocation(
                resource=resource,
                requests=req.canonical(),
                limits=lim.canonical(),
                requests_value=req.as_float(),
                limits_value=lim.as_float(),
                allocatable_value=None if alloc is None else alloc.as_float(),
                requests_percent=(
                    _percent(resource, req, alloc or zero, guard=True) if with_percent else None
                ),
                limits_percent=(
                    _percent(resource, lim, alloc or zero, guard=True) if with_percent else None
                ),
            )
        )
    return rows


def tabwrite(lines: Iterable[str], *, padding: int = 2) -> str:
    """Go ``text/tabwriter`` with minwidth 0, padding 2, spaces, no flags.

    Cells are tab-terminated; a line's text after its last tab is not aligned. Columns align
    across *consecutive* lines that have a cell in that column (tabwriter's column blocks).
    """
    table = [line.split("\t") for line in lines]
    out = [[cell for cell in row] for row in table]

    def fmt(column: int, start: int, end: int) -> None:
        this = start
        while this < end:
            if column >= len(table[this]) - 1:
                this += 1
                continue
            block_start = this
            width = 0
            while this < end and column < len(table[this]) - 1:
                width = max(width, len(table[this][column]) + padding)
                this += 1
            for i in range(block_start, this):
                out[i][column] = table[i][column].ljust(width)
            fmt(column + 1, block_start, this)

    fmt(0, 0, len(table))
    return "".join("".join(row) + "\n" for row in out)


def describe_allocated(node: Mapping[str, Any], pods: Iterable[Mapping[str, Any]]) -> str:
    """The exact block kubectl prints from ``Allocated resources:`` to the last row."""
    lines = ["  Resource\tRequests\tLimits", "  --------\t--------\t------"]
    for row in allocated_resources(node, pods):
        if row.requests_percent is None:
            lines.append(f"  {row.resource}\t{row.requests}\t{row.limits}")
        else:
            lines.append(
                f"  {row.resource}\t{row.requests} ({row.requests_percent}%)"
                f"\t{row.limits} ({row.limits_percent}%)"
            )
    return HEADER + tabwrite(lines)


def pod_rows(node: Mapping[str, Any], pods: Iterable[Mapping[str, Any]]) -> list[PodRow]:
    """kubectl's per-pod rows (status-aware requests, no zero guard), Age column omitted."""
    allocatable = node_allocatable(node)
    zero = Quantity()
    cpu_alloc, mem_alloc = allocatable.get("cpu", zero), allocatable.get("memory", zero)
    rows = []
    for pod in counted_pods(node, pods):
        reqs, lims = pod_requests_and_limits(pod, use_status_resources=True)
        cells = []
        for resource, alloc in (("cpu", cpu_alloc), ("memory", mem_alloc)):
            for values in (reqs, lims):
                q = values.get(resource, zero)
                cells.append(f"{q.canonical()} ({_percent(resource, q, alloc, guard=False)}%)")
        meta = pod.get("metadata") or {}
        rows.append(PodRow(meta.get("namespace", ""), meta.get("name", ""), *cells))
    return rows
