"""Scenario -> API objects (nodes, namespaces, priority classes, workloads, pods, PDBs, events).

This module seeds in dependency order and builds the cluster-wide objects itself (priority
classes, namespaces, PDBs, events); nodes, pods and workloads come from ``nodes``, ``pods``
and ``workloads``, names and times from ``stamps``.

Pod UIDs and container IDs are deterministic from names, so a host tree generated later
matches the API objects. Seeding validates one sample object per template with the strict
schema and bulk-loads the rest unchecked (a 60,000-pod fleet loads in seconds; every object
created or changed later through the API is validated).
"""

from __future__ import annotations

from datetime import timedelta
from typing import TYPE_CHECKING, Any

from gpunode_sandbox.kubesim import dcgmexporter, npd
from gpunode_sandbox.kubesim import scenarios as sc
from gpunode_sandbox.kubesim.defaults import SYSTEM_PRIORITY_CLASSES
from gpunode_sandbox.kubesim.draclaims import Allocator
from gpunode_sandbox.kubesim.nodes import node_object
from gpunode_sandbox.kubesim.stamps import SCENARIO_NOW, T0, suffix, ts
from gpunode_sandbox.kubesim.workloads import seed_workload

if TYPE_CHECKING:
    from gpunode_sandbox.kubesim.crud import ApiCore

Obj = dict[str, Any]


def seed(api: ApiCore, scenario: sc.Scenario) -> None:
    """Load ``scenario`` into ``api``'s store (see module docstring on validation)."""
    for pc in SYSTEM_PRIORITY_CLASSES:
        api.seed(
            {
                "apiVersion": "scheduling.k8s.io/v1",
                "kind": "PriorityClass",
                "metadata": {"name": pc["name"]},
                "value": pc["value"],
                "description": pc["description"],
            },
            validate=True,
        )
    namespaces = [
        "default",
        "kube-system",
        "kube-public",
        "kube-node-lease",
        "gpunode",
        *scenario.namespaces,
        *(w.namespace for w in scenario.workloads),
        *([dcgmexporter.NAMESPACE] if dcgmexporter.exporter_nodes(scenario) else []),
    ]
    for ns in dict.fromkeys(namespaces):
        api.seed(
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}},
            validate=ns == "default",
        )
    for pc2 in scenario.priority_classes:
        obj: Obj = {
            "apiVersion": "scheduling.k8s.io/v1",
            "kind": "PriorityClass",
            "metadata": {"name": pc2.name},
            "value": pc2.value,
            "description": pc2.description,
        }
        if pc2.global_default:
            obj["globalDefault"] = True
        api.seed(obj, validate=True)
    for rc in scenario.runtime_classes:
        api.seed(
            {
                "apiVersion": "node.k8s.io/v1",
                "kind": "RuntimeClass",
                "metadata": {"name": rc},
                "handler": rc,
            },
            validate=True,
        )
    for i, n in enumerate(scenario.nodes):
        node = api.seed(node_object(n), validate=i == 0)
        api.seed(node_lease(node), validate=i == 0)
        for j, rs in enumerate(n.resource_slices):
            api.seed(resource_slice(n.name, rs, j), validate=True)
    if dcgmexporter.exporter_nodes(scenario):  # its EndpointSlice comes when it listens
        api.seed(dcgmexporter.service_object(), validate=True)
    nodes = {n.name: n for n in scenario.nodes}
    claims = Allocator(nodes)
    for w in scenario.workloads:
        seed_workload(api, w, nodes, claims)
    for extra in scenario.objects:
        api.seed(dict(extra), validate=True)
    for p in scenario.pdbs:
        spec: Obj = {"selector": {"matchLabels": dict(p.selector)}}
        if p.max_unavailable is not None:
            spec["maxUnavailable"] = p.max_unavailable
        else:
            spec["minAvailable"] = p.min_available if p.min_available is not None else 1
        api.seed(
            {
                "apiVersion": "policy/v1",
                "kind": "PodDisruptionBudget",
                "metadata": {"name": p.name, "namespace": p.namespace},
                "spec": spec,
            },
            validate=True,
        )
    kills = [e for k in scenario.oom_kills for e in npd.oom_events(k)]
    for i, e in enumerate([*scenario.events, *kills]):
        api.seed(event_object(e, i, api), validate=i == 0)


def resource_slice(node: str, rs: sc.ResourceSlice, index: int) -> Obj:
    """A DRA driver's devices on ``node`` as the driver's kubelet plugin publishes them:
    one pool named after the node, each device with the attributes GPU drivers set."""
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": f"{node}-{rs.driver.replace('.', '-')}-{index}"},
        "spec": {
            "driver": rs.driver,
            "nodeName": node,
            "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
            "devices": [
                {
                    "name": f"gpu-{i}",
                    "attributes": {
                        "index": {"int": i},
                        "productName": {"string": rs.product},
                        "type": {"string": "gpu"},
                    },
                }
                for i in range(rs.devices)
            ],
        },
    }


def node_lease(node: Obj) -> Obj:
    """The kubelet's heartbeat: a Lease named after the node in ``kube-node-lease``, owned by
    the Node, renewed every 10 s (a quarter of its 40 s duration)."""
    name = node["metadata"]["name"]
    return {
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": {
            "name": name,
            "namespace": "kube-node-lease",
            "ownerReferences": [
                {
                    "apiVersion": "v1",
                    "kind": "Node",
                    "name": name,
                    "uid": node["metadata"]["uid"],
                }
            ],
        },
        "spec": {
            "holderIdentity": name,
            "leaseDurationSeconds": 40,
            "renewTime": ts(SCENARIO_NOW).replace("Z", ".000000Z"),
        },
    }


def event_object(e: sc.Event, i: int, api: ApiCore) -> Obj:
    plural = {"Pod": "pods", "Node": "nodes"}.get(e.kind, "")
    target = (
        api.store.get(plural, e.namespace if e.kind != "Node" else None, e.name) if plural else None
    )
    when = ts(T0 + timedelta(hours=2) - timedelta(seconds=e.age_s))
    involved: Obj = {"kind": e.kind, "name": e.name, "apiVersion": "v1"}
    if e.kind != "Node":
        involved["namespace"] = e.namespace
    if e.kind == "Node":
        involved["uid"] = e.name  # the kubelet and NPD use the node name as the UID
    elif target is not None:
        involved["uid"] = target["metadata"]["uid"]
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": f"{e.name}.{suffix('ev', str(i), n=8)}", "namespace": e.namespace},
        "involvedObject": involved,
        "reason": e.reason,
        "message": e.message,
        "type": e.type,
        "count": e.count,
        "firstTimestamp": when,
        "lastTimestamp": when,
        "source": {"component": e.component, **({"host": e.host} if e.host else {})},
        "reportingComponent": e.component,
        "reportingInstance": e.host or "",
    }
