"""The fleet in slim records: every node's requests and free room, read page by page.

``/gpunode top`` and the diagnoses' "where can a restarted pod go" both need every node and
every pod. Holding the decoded pods costs ~300 KiB per node (1.8 GiB at 5,000 nodes, issue
#25) and the garbage collector's time with it; this module instead reduces each page of
pods to per-node sums before the next page is read, and keeps only:

- per node: the slim node (name, labels, taints, unschedulable, allocatable, capacity), the
  kubectl totals (``PodRequests``/``PodLimits`` sums over its counted pods), the scheduler's
  units of the same, and for GPU nodes the ``NodeInfo`` and the preemption slots;
- per pod on a GPU node: which node it is on (to add its metrics to the node);
- per pod with a required pod anti-affinity (rare): its namespace, labels, node and those
  terms, for the scheduler's "existing pods' anti-affinity" check (``bot.core.affinity``).

Sync on purpose: the gateway runs ``read_fleet`` on one of its threads; the pages are decoded
and reduced by ``reduce_*_page`` in the cluster's ``PageDecoder`` process while that thread
fetches the next page, so neither the decode nor the reduction runs on the event loop (or
holds its interpreter lock). The arithmetic is ``bot.core.allocation``'s, the same as the
per-node view's.
"""

from __future__ import annotations

import functools
import json
import re
from array import array
from collections import deque
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any, NamedTuple, TypeVar

from bot.core.allocation import (
    TERMINAL_PHASES,
    ResourceList,
    add_resource_list,
    allocation_rows,
    node_allocatable,
    pod_requests_and_limits,
)
from bot.core.cluster import NodeInfo, NodeLoad, RoomOnNode
from bot.core.workloads import PodSlot
from bot.kube import objects, reading
from bot.kube.decoding import PageDecoder
from bot.kube.scheduling import request_units, room_from, slot_of
from bot.kube.transport import Transport, gc_paused

Obj = dict[str, Any]
R = TypeVar("R")
#: pages decoded ahead of the merge: the fetch of page n+1 overlaps the decode of page n;
#: two in flight bound the memory to a few pages
AHEAD = 2
#: items per page, as kubectl asks
PAGE = 500


@dataclass
class NodeTally:
    """One node, slim: what ``allocation_rows`` and ``room_from`` read, and the sums."""

    node: Obj
    info: NodeInfo | None  # GPU nodes only
    requests: ResourceList = field(default_factory=dict)
    limits: ResourceList = field(default_factory=dict)
    used: dict[str, int] = field(default_factory=dict)
    slots: list[PodSlot] = field(default_factory=list)


@dataclass
class FleetTally:
    """The fleet as last read; ``where`` maps ``namespace/name`` of pods on GPU nodes."""

    nodes: dict[str, NodeTally] = field(default_factory=dict)
    where: dict[str, str] = field(default_factory=dict)
    pods: int = 0
    #: pods with a required podAntiAffinity, slim (``slim_anti``): (node, pod)
    anti: list[tuple[str, Obj]] = field(default_factory=list)

    def loads(self, working_set: dict[str, int] | None) -> list[NodeLoad]:
        """GPU nodes with their Allocated-resources rows (and working set when known)."""
        out = []
        for name, t in self.nodes.items():
            if t.info is None:
                continue
            out.append(
                NodeLoad(
                    node=t.info,
                    allocated=allocation_rows(node_allocatable(t.node), t.requests, t.limits),
                    working_set_bytes=None if working_set is None else working_set.get(name, 0),
                )
            )
        return out

    def room(self) -> list[RoomOnNode]:
        return [room_from(t.node, t.used, t.slots) for t in self.nodes.values()]


def slim_node(node: Obj) -> Obj:
    meta, spec, status = (
        node.get("metadata") or {},
        node.get("spec") or {},
        node.get("status") or {},
    )
    return {
        "metadata": {"name": meta.get("name", ""), "labels": meta.get("labels") or {}},
        "spec": {"unschedulable": spec.get("unschedulable"), "taints": spec.get("taints") or []},
        "status": {
            "allocatable": status.get("allocatable") or {},
            "capacity": status.get("capacity") or {},
        },
    }


class NodePage(NamedTuple):
    token: str | None
    nodes: list[tuple[str, Obj, NodeInfo | None]]


class PodPage(NamedTuple):
    """One page of pods reduced: per node (requests, limits, scheduler units incl. the pod
    count), and every counted pod's slot (its node, what preempting it frees)."""

    token: str | None
    sums: dict[str, tuple[ResourceList, ResourceList, dict[str, int]]]
    slots: list[tuple[str, PodSlot]]
    anti: list[tuple[str, Obj]]


class MetricsPage(NamedTuple):
    """A metrics list reduced: ``keys`` ("namespace/name" joined by newlines) and ``values``
    (working-set bytes, int64 in ``array`` order), two objects instead of one tuple per pod,
    so handing 150,000 pods back from the decoder is two copies, not 150,000 objects."""

    token: str | None
    keys: str
    values: bytes

    def usage(self) -> Iterator[tuple[str, int]]:
        if not self.keys:
            return iter(())
        return zip(self.keys.split("\n"), array("q", self.values), strict=True)


def _page(body: bytes) -> tuple[str | None, list[Obj]]:
    page = json.loads(body) if body else {}
    return (page.get("metadata") or {}).get("continue") or None, page.get("items") or []


def reduce_node_page(body: bytes, dra: dict[str, list[str]] | None = None) -> NodePage:
    """A page of nodes: each slim, with its NodeInfo when it is a GPU node (``dra``: node ->
    the DRA drivers with ResourceSlices there, so a DRA GPU node counts too)."""
    token, items = _page(body)
    out = []
    for n in items:
        name = (n.get("metadata") or {}).get("name", "")
        drivers = (dra or {}).get(name, [])
        info = (
            objects.parse_node(n, dra_drivers=drivers) if objects.is_gpu_node(n, drivers) else None
        )
        out.append((name, slim_node(n), info))
    return NodePage(token, out)


def reduce_pod_page(body: bytes) -> PodPage:
    """kubectl's counted pods (bound, not Succeeded/Failed) summed per node."""
    token, items = _page(body)
    sums: dict[str, tuple[ResourceList, ResourceList, dict[str, int]]] = {}
    slots: list[tuple[str, PodSlot]] = []
    anti: list[tuple[str, Obj]] = []
    for pod in items:
        node = (pod.get("spec") or {}).get("nodeName")
        if not node or (pod.get("status") or {}).get("phase") in TERMINAL_PHASES:
            continue
        reqs, lims = pod_requests_and_limits(pod)
        into = sums.setdefault(node, ({}, {}, {}))
        add_resource_list(into[0], reqs)
        add_resource_list(into[1], lims)
        units = request_units(reqs)
        for name, value in units.items():
            into[2][name] = into[2].get(name, 0) + value
        slots.append((node, slot_of(pod, units)))
        if (slim := slim_anti(pod)) is not None:
            anti.append((node, slim))
    return PodPage(token, sums, slots, anti)


def slim_anti(pod: Obj) -> Obj | None:
    """A pod with a required pod anti-affinity, cut to what the filter reads (None: none)."""
    affinity = (pod.get("spec") or {}).get("affinity") or {}
    required = (affinity.get("podAntiAffinity") or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution"
    )
    if not required:
        return None
    meta = pod.get("metadata") or {}
    return {
        "metadata": {
            "namespace": meta.get("namespace"),
            "name": meta.get("name"),
            "labels": meta.get("labels") or {},
        },
        "spec": {
            "affinity": {
                "podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": required}
            }
        },
    }


_SPACE = re.compile(r"[ \t\n\r]*")


def _skip(text: str, at: int) -> int:
    match = _SPACE.match(text, at)
    return match.end() if match else at


def walk_list(body: bytes) -> Iterator[tuple[str, Any]]:
    """A JSON list answer's top-level fields in order, ``("items", item)`` once per item,
    each item decoded only when reached: a caller that reduces each item at once never
    holds all of them (metrics-server answers a pod metrics list in one piece, 150,000
    pods on a 5,000-node cluster). Raises ValueError when the body is not a JSON object."""
    text, decode = body.decode("utf-8"), json.JSONDecoder().raw_decode

    def expect(at: int, char: str) -> int:
        if text[at : at + 1] != char:
            raise ValueError(f"a list answer: expected {char!r} at {at}")
        return _skip(text, at + 1)

    at = expect(_skip(text, 0), "{")
    if text[at : at + 1] == "}":
        return
    while True:
        key, at = decode(text, at)
        at = expect(_skip(text, at), ":")
        if key == "items" and text[at : at + 1] == "[":
            at = _skip(text, at + 1)
            while text[at : at + 1] != "]":
                item, at = decode(text, at)
                yield "items", item
                at = _skip(text, at)
                if text[at : at + 1] == ",":
                    at = _skip(text, at + 1)
            at = _skip(text, at + 1)
        else:
            value, at = decode(text, at)
            yield key, value
            at = _skip(text, at)
        if text[at : at + 1] == "}":
            return
        at = expect(at, ",")


def reduce_metrics_page(body: bytes) -> MetricsPage:
    token: str | None = None
    keys: list[str] = []
    values = array("q")
    for field_name, value in walk_list(body) if body else ():
        if field_name == "items":
            m = objects.parse_pod_metrics(value)
            keys.append(f"{m.namespace}/{m.name}")
            values.append(m.memory_working_set_bytes)
        elif field_name == "metadata" and isinstance(value, dict):
            token = value.get("continue") or None
    return MetricsPage(token, "\n".join(keys), values.tobytes())


def list_token(body: bytes) -> tuple[bool, str | None]:
    """(found, the ``continue`` token) read from the list's metadata without decoding the
    items: the API server writes ``metadata`` before ``items`` (Go's field order). Not found
    when the body is shaped otherwise; the caller then waits for the full decode."""
    head = body[:4096]
    at, items = head.find(b'"metadata"'), head.find(b'"items"')
    if at < 0 or (0 <= items < at):
        return False, None
    start = head.find(b"{", at)
    if start < 0:
        return False, None
    try:
        meta, _ = json.JSONDecoder().raw_decode(
            body[start : start + 65536].decode("utf-8", "replace")
        )
    except ValueError:
        return False, None
    return True, (meta.get("continue") if isinstance(meta, dict) else None) or None


def paged(
    t: Transport,
    path: str,
    reduce: Callable[[bytes], R],
    decoder: PageDecoder,
    token_of: Callable[[R], str | None],
) -> Iterator[R]:
    """Every page of ``path`` reduced by ``reduce`` in the decoder, in order; the next page
    is fetched while earlier ones decode (at most ``AHEAD`` waiting)."""
    pending: deque[Future[R]] = deque()
    token: str | None = None
    while True:
        body = t.request_bytes("GET", path, query=[("limit", PAGE), ("continue", token)])
        found, token = list_token(body)
        future = decoder.submit(reduce, body)
        del body
        if not found:
            yield from (f.result() for f in _drain(pending))
            result = future.result()
            token = token_of(result)
            yield result
        else:
            pending.append(future)
            while len(pending) > AHEAD or (pending and not token):
                yield pending.popleft().result()
        if not token:
            yield from (f.result() for f in _drain(pending))
            return


def _drain(pending: deque[Future[R]]) -> Iterator[Future[R]]:
    while pending:
        yield pending.popleft()


def read_fleet(
    t: Transport, decoder: PageDecoder, dra: dict[str, list[str]] | None = None
) -> FleetTally:
    """Nodes, then pods, each page reduced to slim records before it is merged; ``dra``:
    node -> DRA drivers with ResourceSlices there (``bot.kube.dra``)."""
    fleet = FleetTally()
    with gc_paused():  # what a page leaves here is small and acyclic; see transport.gc_paused
        _read_fleet(t, decoder, fleet, dra or {})
    return fleet


def _read_fleet(
    t: Transport, decoder: PageDecoder, fleet: FleetTally, dra: dict[str, list[str]]
) -> None:
    nodes = functools.partial(reduce_node_page, dra=dra)
    for node_page in paged(t, "/api/v1/nodes", nodes, decoder, lambda p: p.token):
        for name, slim, info in node_page.nodes:
            fleet.nodes[name] = NodeTally(slim, info)
    for pod_page in paged(t, "/api/v1/pods", reduce_pod_page, decoder, lambda p: p.token):
        merge_pods(fleet, pod_page)


def merge_pods(fleet: FleetTally, page: PodPage) -> None:
    for node, (reqs, lims, used) in page.sums.items():
        t = fleet.nodes.get(node)
        if t is None:
            continue  # bound to a node that is gone: no row to add it to
        add_resource_list(t.requests, reqs)
        add_resource_list(t.limits, lims)
        for name, value in used.items():
            t.used[name] = t.used.get(name, 0) + value
        fleet.pods += used.get("pods", 0)
    fleet.anti.extend(page.anti)
    for node, slot in page.slots:
        t = fleet.nodes.get(node)
        if t is not None and t.info is not None:
            t.slots.append(slot)
            fleet.where[slot.key] = node


def read_working_set(
    t: Transport, version: str, where: dict[str, str], decoder: PageDecoder
) -> dict[str, int]:
    """Working-set bytes per node, summed from pod metrics a page at a time."""
    used: dict[str, int] = {}
    path = f"/apis/{reading.METRICS_GROUP}/{version}/pods"
    with gc_paused():
        for page in paged(t, path, reduce_metrics_page, decoder, lambda p: p.token):
            for key, value in page.usage():
                node = where.get(key)
                if node is not None:
                    used[node] = used.get(node, 0) + value
    return used
