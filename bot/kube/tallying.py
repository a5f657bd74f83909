"""The fleet in slim records: every node's requests and free room, read page by page.

``/gpunode top`` and the diagnoses' "where can a restarted pod go" both need every node and
every pod. Holding the decoded pods costs ~300 KiB per node (1.8 GiB at 5,000 nodes, issue
#25) and the garbage collector's time with it; this module instead reduces each page of
pods to per-node sums before the next page is read, and keeps only:

- per node: the slim node (name, labels, taints, unschedulable, allocatable, capacity), the
  kubectl totals (``PodRequests``/``PodLimits`` sums over its counted pods), the scheduler's
  units of the same, and for GPU nodes the ``NodeInfo`` and the preemption slots;
- per pod on a GPU node: which node it is on (to add its metrics to the node).

Sync on purpose: the gateway runs ``read_fleet`` on one of its threads, so the decode and the
reduction never run on the event loop. The arithmetic is ``bot.core.allocation``'s, the
same as the per-node view's.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

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
from bot.kube.scheduling import request_units, room_from, slot_of
from bot.kube.transport import Transport

Obj = dict[str, Any]


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


def tally_nodes(nodes: Iterable[Obj]) -> FleetTally:
    fleet = FleetTally()
    for n in nodes:
        gpu = objects.is_gpu_node(n)
        name = (n.get("metadata") or {}).get("name", "")
        fleet.nodes[name] = NodeTally(slim_node(n), objects.parse_node(n) if gpu else None)
    return fleet


def tally_pod(fleet: FleetTally, pod: Obj) -> None:
    """Add one pod to its node's sums (kubectl's counted pods: bound, not Succeeded/Failed)."""
    node = (pod.get("spec") or {}).get("nodeName")
    if not node or (pod.get("status") or {}).get("phase") in TERMINAL_PHASES:
        return
    t = fleet.nodes.get(node)
    if t is None:
        return  # bound to a node that is gone: no row to add it to
    fleet.pods += 1
    reqs, lims = pod_requests_and_limits(pod)
    add_resource_list(t.requests, reqs)
    add_resource_list(t.limits, lims)
    units = request_units(reqs)
    for name, value in units.items():
        t.used[name] = t.used.get(name, 0) + value
    if t.info is not None:
        t.slots.append(slot_of(pod, units))
        meta = pod.get("metadata") or {}
        fleet.where[f"{meta.get('namespace', '')}/{meta.get('name', '')}"] = node


def read_fleet(t: Transport) -> FleetTally:
    """Nodes, then pods a page at a time, each page reduced before the next is read."""
    fleet = tally_nodes(t.iter_items("/api/v1/nodes"))
    for pod in t.iter_items("/api/v1/pods"):
        tally_pod(fleet, pod)
    return fleet


def read_working_set(t: Transport, version: str, where: dict[str, str]) -> dict[str, int]:
    """Working-set bytes per node, summed from pod metrics a page at a time."""
    used: dict[str, int] = {}
    for item in t.iter_items(f"/apis/{reading.METRICS_GROUP}/{version}/pods"):
        meta = item.get("metadata") or {}
        node = where.get(f"{meta.get('namespace', '')}/{meta.get('name', '')}")
        if node is not None:
            m = objects.parse_pod_metrics(item)
            used[node] = used.get(node, 0) + m.memory_working_set_bytes
    return used
