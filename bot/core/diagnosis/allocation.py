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

from bot.core.diagnosis.requests import HUGEPAGES_PREFIX, parse_resource_list
from bot.core.diagnosis.requests import TERMINAL_PHASES as TERMINAL_PHASES
from bot.core.diagnosis.requests import ResourceList as ResourceList
from bot.core.diagnosis.requests import add_resource_list as add_resource_list
from bot.core.diagnosis.requests import pod_requests_and_limits as pod_requests_and_limits
from bot.core.model.cluster import ResourceAllocation
from bot.core.model.quantity import Quantity

STANDARD_ROWS = ("cpu", "memory", "ephemeral-storage")
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
        add_resource_list(reqs, pod_reqs)
        add_resource_list(lims, pod_lims)
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
