"""Dynamic Resource Allocation (``resource.k8s.io``): which drivers publish devices on which
node. A DRA GPU node has no ``nvidia.com/gpu`` in allocatable; its GPUs are ResourceSlices
(``spec.driver: gpu.nvidia.com``, ``spec.nodeName``), so the one GPU-node predicate
(``bot.core.cluster.is_gpu_node``) needs them.

The group is ``v1`` from Kubernetes 1.34 and ``v1beta1`` before; a cluster that serves neither
(or an RBAC that does not grant ``list resourceslices``) has no DRA nodes as far as the bot
can tell, which the node's extended resources still cover. Sync: run in the gateway's threads.
"""

from __future__ import annotations

from typing import Any

from kubernetes.client.exceptions import ApiException

from bot.kube.transport import Transport

VERSIONS = ("v1", "v1beta1")


def list_slices(t: Transport, node: str | None = None) -> list[dict[str, Any]]:
    """ResourceSlices (of ``node`` only, when given); [] when DRA is not served or readable."""
    query: dict[str, Any] = {"field_selector": f"spec.nodeName={node}"} if node else {}
    for version in VERSIONS:
        try:
            return t.list_all(f"/apis/resource.k8s.io/{version}/resourceslices", **query)
        except ApiException as exc:
            if exc.status == 404:
                continue  # this version (or the whole group) is not served: try the older one
            if exc.status in (401, 403):
                return []  # the bot may not list them: DRA stays unknown, not an error
            raise
    return []


def drivers_by_node(slices: list[dict[str, Any]]) -> dict[str, list[str]]:
    """node name -> sorted drivers with a ResourceSlice for that node (node-local slices
    only: ``allNodes`` or ``nodeSelector`` slices describe network-attached devices)."""
    out: dict[str, set[str]] = {}
    for s in slices:
        spec = s.get("spec") or {}
        node, driver = spec.get("nodeName"), spec.get("driver")
        if node and driver:
            out.setdefault(str(node), set()).add(str(driver))
    return {node: sorted(drivers) for node, drivers in out.items()}
