"""Karpenter NodePools (``karpenter.sh``) -> ``NodePoolInfo``: the nodes a pool would launch,
read from the pool itself so a pool with no node yet is seen. ``parse_*`` is pure;
``list_nodepools`` calls the API (run in a thread by the gateway)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from bot.core.model.cluster import NodePoolInfo, Taint, is_accelerator_resource
from bot.core.model.quantity import parse_quantity
from bot.core.model.workloads import Requirement
from bot.kube.transport import Transport

GROUP = "karpenter.sh"
Obj = Mapping[str, Any]
#: a pool whose nodes carry one of these is a GPU pool (GPU feature discovery's label, the
#: device plugin's usual taint)
GPU_MARKS = ("nvidia.com/gpu.present", "nvidia.com/gpu", "amd.com/gpu")


def _units(resources: Mapping[str, Any]) -> dict[str, int]:
    out = {}
    for name, text in resources.items():
        q = parse_quantity(str(text))
        out[str(name)] = q.milli_value() if name == "cpu" else q.value()
    return out


def parse_nodepool(obj: Obj) -> NodePoolInfo:
    meta, spec, status = obj.get("metadata") or {}, obj.get("spec") or {}, obj.get("status") or {}
    template = spec.get("template") or {}
    labels = {
        str(k): str(v) for k, v in ((template.get("metadata") or {}).get("labels") or {}).items()
    }
    tspec = template.get("spec") or {}
    requirements = [
        Requirement(
            key=str(r.get("key", "")),
            operator=str(r.get("operator", "")),
            values=[str(v) for v in r.get("values") or []],
        )
        for r in tspec.get("requirements") or []
    ]
    taints = [
        Taint(key=str(t.get("key", "")), value=t.get("value"), effect=str(t.get("effect", "")))
        for t in tspec.get("taints") or []
    ]
    limits = _units(spec.get("limits") or {})
    gpu = (
        any(k in GPU_MARKS for k in labels)
        or any(r.key in GPU_MARKS for r in requirements)
        or any(t.key in GPU_MARKS for t in taints)
        or any(is_accelerator_resource(k) and v > 0 for k, v in limits.items())
    )
    return NodePoolInfo(
        name=str(meta.get("name", "")),
        labels=labels,
        requirements=requirements,
        taints=taints,
        limits=limits,
        used=_units(status.get("resources") or {}),
        gpu=gpu,
    )


def list_nodepools(t: Transport, version: str) -> list[Any]:
    return t.list_all(f"/apis/{GROUP}/{version}/nodepools")


CAPI_GROUP = "cluster.x-k8s.io"
CAPACITY = "capacity.cluster-autoscaler.kubernetes.io/"
MIN_SIZE = "cluster.x-k8s.io/cluster-api-autoscaler-node-group-min-size"
MAX_SIZE = "cluster.x-k8s.io/cluster-api-autoscaler-node-group-max-size"


def _pairs(text: str) -> list[tuple[str, str]]:
    return [
        (k.strip(), v.strip())
        for item in text.split(",")
        if item.strip()
        for k, _, v in [item.partition("=")]
    ]


def parse_node_group(obj: Obj) -> NodePoolInfo | None:
    """A Cluster API MachineDeployment or MachineSet that the cluster autoscaler scales (both
    size annotations), with one new node as its scale-from-zero annotations state it; None
    for one the autoscaler does not manage."""
    meta, spec = obj.get("metadata") or {}, obj.get("spec") or {}
    notes = meta.get("annotations") or {}
    if MIN_SIZE not in notes or MAX_SIZE not in notes:
        return None
    labels = dict(_pairs(notes.get(CAPACITY + "labels", "")))
    taints = []
    for key, rest in _pairs(notes.get(CAPACITY + "taints", "")):
        value, _, effect = rest.rpartition(":")
        taints.append(Taint(key=key, value=value or None, effect=effect))
    capacity: dict[str, int] = {}
    for name, key in (("cpu", "cpu"), ("memory", "memory"), ("pods", "maxPods")):
        if CAPACITY + key in notes:
            capacity |= _units({name: notes[CAPACITY + key]})
    gpus = int(notes.get(CAPACITY + "gpu-count") or 0)
    if gpus:
        gpu_type = notes.get(CAPACITY + "gpu-type") or "nvidia.com/gpu"
        capacity[gpu_type] = gpus
    try:
        max_nodes: int | None = int(notes[MAX_SIZE])
    except ValueError:
        max_nodes = None
    return NodePoolInfo(
        name=f"{meta.get('namespace', '')}/{meta.get('name', '')}",
        scaler="cluster autoscaler",
        label=f"Cluster API {obj.get('kind', 'MachineDeployment')}",
        labels=labels,
        taints=taints,
        capacity=capacity,
        nodes=int(spec.get("replicas") or 0),
        max_nodes=max_nodes,
        gpu=gpus > 0 or any(k in GPU_MARKS for k in labels),
    )


def node_groups(deployments: list[Obj], sets: list[Obj]) -> list[NodePoolInfo]:
    """The autoscaled node groups: MachineDeployments, and MachineSets no deployment owns."""
    owned = [
        s
        for s in sets
        if not any(
            r.get("kind") == "MachineDeployment"
            for r in (s.get("metadata") or {}).get("ownerReferences") or []
        )
    ]
    return [g for o in [*deployments, *owned] if (g := parse_node_group(o)) is not None]


def list_capi(t: Transport, version: str, plural: str) -> list[Any]:
    return t.list_all(f"/apis/{CAPI_GROUP}/{version}/{plural}")
