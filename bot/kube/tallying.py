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
  terms, for the scheduler's "existing pods' anti-affinity" check (``bot.core.remedies.affinity``).

Sync on purpose: the gateway runs ``read_fleet`` on one of its threads; the pages are decoded
and reduced by ``reduce_*_page`` in the cluster's ``PageDecoder`` process while that thread
fetches the next page, so neither the decode nor the reduction runs on the event loop (or
holds its interpreter lock). The arithmetic is ``bot.core.diagnosis.allocation``'s, the same as the
per-node view's.

A serving bot keeps the same reduction per object instead: its pods and nodes informers
(``bot.kube.informing``) hold one ``PodRecord`` per pod and one ``node_record`` per node,
cut by ``pod_records_page``/``node_records_page`` in the decoder and shared by
``FleetShare``/``NodeShare``, and ``tally_from`` sums them into the same ``FleetTally``
``read_fleet`` builds (``tests/kube/test_fleet_informers.py`` compares the two).
"""

from __future__ import annotations

import functools
import itertools
import json
import sys
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NamedTuple, TypeVar

from bot.core.diagnosis.allocation import allocation_rows, node_allocatable
from bot.core.diagnosis.requests import (
    TERMINAL_PHASES,
    ResourceList,
    add_resource_list,
    pod_requests_and_limits,
)
from bot.core.model.cluster import NodeInfo, NodeLoad, RoomOnNode
from bot.core.model.quantity import Quantity
from bot.core.model.workloads import PodSlot
from bot.kube import objects
from bot.kube.cutting import (
    Labels,
    MetricsPage,
    PodRecord,
    Shape,
    forget_stream,
    reduce_metrics_page,
    reduce_metrics_piece,
    slim_anti,
    slot_key,
)
from bot.kube.decoding import PageDecoder
from bot.kube.pages import METRICS_GROUP, gc_paused, list_token
from bot.kube.scheduling import request_units, room_from

if TYPE_CHECKING:  # the decoder process imports this module: no kubernetes client there
    from bot.kube.transport import Transport

Obj = dict[str, Any]
R = TypeVar("R")
#: pages decoded ahead of the merge: the fetch of page n+1 overlaps the decode of page n;
#: two in flight bound the memory to a few pages
AHEAD = 2
#: a counted pod on a GPU node: its key, priority and scheduler units (``PodSlot``'s fields)
Slot = tuple[str, int, dict[str, int]]
#: items per page, as kubectl asks
PAGE = 500
#: bytes of a streamed answer handed to the decoder at a time (about 3,000 pod metrics)
PIECE = 1024 * 1024


@dataclass
class NodeTally:
    """One node, slim: what ``allocation_rows`` and ``room_from`` read, and the sums."""

    node: Obj
    info: NodeInfo | None  # GPU nodes only
    requests: ResourceList = field(default_factory=dict)
    limits: ResourceList = field(default_factory=dict)
    used: dict[str, int] = field(default_factory=dict)
    #: (pod key, priority, scheduler units) per counted pod; ``PodSlot`` models are built
    #: only when the room is asked for (a model per pod costs ~4x the tuple, held per pod)
    slots: list[Slot] = field(default_factory=list)


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
        return [
            room_from(
                t.node, t.used, [PodSlot(key=k, priority=p, requests=r) for k, p, r in t.slots]
            )
            for t in self.nodes.values()
        ]


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
    slots: list[tuple[str, Slot]]
    anti: list[tuple[str, Obj]]


@functools.lru_cache(maxsize=4096)
def labels_of(text: Labels) -> dict[str, str]:
    """A record's labels as a dict: one per distinct label set, shared: never mutate it."""
    return json.loads(text)  # type: ignore[no-any-return]


@functools.lru_cache(maxsize=4096)
def expanded(shape: Shape) -> tuple[ResourceList, ResourceList, dict[str, int]]:
    """A record's shape as (requests, limits, scheduler units incl. the pod's slot): one set
    of dicts per distinct shape (a fleet has a few hundred), shared: never mutate them."""
    requests, limits = json.loads(shape)
    reqs = {name: Quantity(nanos, fmt) for name, nanos, fmt in requests}
    lims = {name: Quantity(nanos, fmt) for name, nanos, fmt in limits}
    return reqs, lims, request_units(reqs)


#: the parts of a ``node_record`` a node pool's nodes hold alike, by (section, field)
_POOL_PARTS = frozenset(
    {
        ("metadata", "annotations"),
        ("spec", "taints"),
        ("status", "allocatable"),
        ("status", "capacity"),
        ("status", "nodeInfo"),
    }
)
#: distinct node parts ``NodeShare`` keeps one of, at most (a node pool's parts are a few;
#: parts that differ on every node just churn through, and the table is emptied past this)
MAX_NODE_PARTS = 4096


def _interned(value: Any) -> Any:
    """``value`` (decoded JSON) with every string in it interned, containers rebuilt."""
    if type(value) is str:
        return sys.intern(value)
    if type(value) is dict:
        return {_interned(k): _interned(v) for k, v in value.items()}
    if type(value) is list:
        return [_interned(v) for v in value]
    return value


class NodeShare:
    """Equal parts of node records made one, as ``FleetShare`` does for pods. A record from
    the decoder (or another page) arrives with its own copies of every string and dict: a
    ``node_record`` held so cost ~4.7 KiB (5,000 nodes: 23 MiB of the bot's process, issue
    #25). Here every string is interned (condition types and reasons, label keys, versions,
    the hostname label's value and the node's name: one string each), and the parts a node
    pool's nodes hold alike (allocatable, capacity, nodeInfo, taints, annotations) are one
    object per distinct value. A node's labels and conditions stay its own dicts (a hostname,
    transition times), their strings shared. Shared parts are never mutated: the tally,
    ``objects.parse_node`` and the room read them and copy what they keep."""

    def __init__(self) -> None:
        self._parts: dict[str, Any] = {}

    def _part(self, value: Any) -> Any:
        key = json.dumps(value, separators=(",", ":"))
        held = self._parts.get(key)
        if held is None:
            if len(self._parts) >= MAX_NODE_PARTS:
                self._parts.clear()
            held = self._parts[key] = _interned(value)
        return held

    def node(self, record: Obj) -> Obj:
        """``record`` (a ``node_record``) with its parts shared; equal to it."""
        intern = sys.intern
        return {
            intern(section): {
                intern(k): self._part(v) if (section, k) in _POOL_PARTS else _interned(v)
                for k, v in fields.items()
            }
            for section, fields in record.items()
        }


def tally_from(
    nodes: Iterable[tuple[str, str, Obj]],
    pods: Iterable[tuple[str, str, PodRecord]],
    info_of: Callable[[Obj], NodeInfo | None],
) -> FleetTally:
    """The fleet from an informer's records, as ``read_fleet`` sums it from pages (pods in
    the API's list order, so each total keeps the format kubectl's would)."""
    fleet = FleetTally()
    for _, name, node in nodes:
        fleet.nodes[name] = NodeTally(node, info_of(node))
    with gc_paused():
        for ns, name, (node_name, priority, shape, anti, *_) in pods:
            if not node_name:
                continue
            if anti is not None:
                fleet.anti.append((node_name, anti))
            t = fleet.nodes.get(node_name)
            if t is None:
                continue  # bound to a node that is gone: no row to add it to
            reqs, lims, units = expanded(shape)
            add_resource_list(t.requests, reqs)
            add_resource_list(t.limits, lims)
            used = t.used
            for unit, value in units.items():
                used[unit] = used.get(unit, 0) + value
            fleet.pods += 1
            if t.info is not None:
                key = f"{ns}/{name}"
                t.slots.append((key, priority, units))
                fleet.where[key] = node_name
    return fleet


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
    slots: list[tuple[str, Slot]] = []
    anti: list[tuple[str, Obj]] = []
    same: dict[tuple[tuple[str, int], ...], dict[str, int]] = {}  # one dict per distinct units
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
        key, priority = slot_key(pod)
        units = same.setdefault(tuple(sorted(units.items())), units)
        slots.append((node, (key, priority, units)))
        if (slim := slim_anti(pod)) is not None:
            anti.append((node, slim))
    return PodPage(token, sums, slots, anti)


#: the answers being walked piece by piece in the decoder (``reduce_metrics_piece``), by id
_STREAM_IDS = itertools.count(1)


def _with_last(pieces: Iterator[bytes]) -> Iterator[tuple[bytes, bool]]:
    held = next(pieces, None)
    while held is not None:
        following = next(pieces, None)
        yield held, following is None
        held = following


def metrics_pages(t: Transport, path: str, decoder: PageDecoder) -> Iterator[MetricsPage]:
    """Every page of a metrics list, reduced in the decoder as it streams: an answer of more
    than one ``PIECE`` is handed over piece by piece, so this process holds two pieces of it
    (and the decoder one), never the whole answer."""
    token: str | None = None
    while True:
        pieces = t.request_chunks(
            path, query=[("limit", PAGE), ("continue", token)], chunk_bytes=PIECE
        )
        head = list(itertools.islice(pieces, 2))
        if len(head) < 2:  # one piece: decoded as a page
            page = decoder.submit(reduce_metrics_page, head[0] if head else b"").result()
            token = page.token
            yield page
        else:
            token = None
            for page in _streamed(itertools.chain(head, pieces), decoder):
                token = page.token or token
                yield page
        if not token:
            return


def _streamed(pieces: Iterator[bytes], decoder: PageDecoder) -> Iterator[MetricsPage]:
    stream, done = next(_STREAM_IDS), False
    pending: deque[Future[MetricsPage]] = deque()
    try:
        for piece, final in _with_last(pieces):
            step = functools.partial(reduce_metrics_piece, stream, final=final)
            pending.append(decoder.submit(step, piece, process=True))
            while len(pending) > AHEAD:
                yield pending.popleft().result()
        while pending:
            yield pending.popleft().result()
        done = True
    finally:
        if not done:
            for future in pending:
                future.cancel()
            decoder.submit(functools.partial(forget_stream, stream), b"", process=True)


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
    with gc_paused():  # what a page leaves here is small and acyclic; see pages.gc_paused
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
            fleet.where[slot[0]] = node


def read_working_set(
    t: Transport, version: str, where: dict[str, str], decoder: PageDecoder
) -> dict[str, int]:
    """Working-set bytes per node, summed from pod metrics as they stream."""
    path = f"/apis/{METRICS_GROUP}/{version}/pods"
    with gc_paused():
        return usage_by_node(metrics_pages(t, path, decoder), where)


def read_pod_usage(t: Transport, version: str, decoder: PageDecoder) -> list[MetricsPage]:
    """Every running pod's working-set bytes, as the metrics pages came (two objects a page,
    not one a pod: 150,000 pods hold ~6 MB), for ``usage_by_node`` once the pods' nodes are
    known: read beside the fleet's lists, not after them."""
    path = f"/apis/{METRICS_GROUP}/{version}/pods"
    with gc_paused():
        return list(metrics_pages(t, path, decoder))


def usage_by_node(pages: Iterable[MetricsPage], where: dict[str, str]) -> dict[str, int]:
    """Working-set bytes per node: each pod's (``pages``) added to its node's (``where``:
    "namespace/name" -> node); a pod not in ``where`` (not counted, or gone) is left out."""
    used: dict[str, int] = {}
    for page in pages:
        for key, value in page.usage():
            node = where.get(key)
            if node is not None:
                used[node] = used.get(node, 0) + value
    return used
