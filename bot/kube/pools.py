"""Karpenter NodePools (``karpenter.sh``) -> ``NodePoolInfo``: the nodes a pool would launch,
read from the pool itself so a pool with no node yet is seen. ``parse_*`` is pure;
``list_nodepools`` calls the API (run in a thread by the gateway)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from bot.core.cluster import NodePoolInfo, Taint, is_accelerator_resource
from bot.core.quantity import parse_quantity
from bot.core.workloads import Requirement
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
