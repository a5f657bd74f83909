"""Dynamic Resource Allocation (``resource.k8s.io``): which drivers publish devices on which
node. A DRA GPU node has no ``nvidia.com/gpu`` in allocatable; its GPUs are ResourceSlices
(``spec.driver: gpu.nvidia.com``, ``spec.nodeName``), so the one GPU-node predicate
(``bot.core.model.cluster.is_gpu_node``) needs them.

Pods hold devices through ResourceClaims (``spec.resourceClaims``; a claim made from a template
is named in ``status.resourceClaimStatuses``); a claim's ``status.allocation.devices.results``
says which (driver, pool, device). Read per namespace of the node's pods that have claims.

The group is ``v1`` from Kubernetes 1.34, ``v1beta2`` in 1.33 and ``v1beta1`` in 1.32; a
cluster that serves none (or an RBAC that does not grant ``list resourceslices``) has no DRA
nodes as far as the bot can tell, which the node's extended resources still cover. Sync: run in
the gateway's threads.
"""

from __future__ import annotations

from typing import Any

from kubernetes.client.exceptions import ApiException

from bot.core.model.cluster import ClaimedDevice
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


#: ResourceClaim versions, newest first: v1 (1.34), v1beta2 (1.33), v1beta1 (1.32)
CLAIM_VERSIONS = ("v1", "v1beta2", "v1beta1")


def list_claims(t: Transport, namespace: str | None) -> list[dict[str, Any]] | None:
    """The ResourceClaims of ``namespace`` (None: of every namespace); None when DRA is not
    served or the bot may not read them (the pods' GPU devices stay unknown, which the
    GPU-pod definition allows)."""
    where = f"namespaces/{namespace}/" if namespace else ""
    for version in CLAIM_VERSIONS:
        try:
            return t.list_all(f"/apis/resource.k8s.io/{version}/{where}resourceclaims")
        except ApiException as exc:
            if exc.status == 404:
                continue
            if exc.status in (401, 403):
                return None
            raise
    return None


def claim_names(pod: dict[str, Any]) -> list[str]:
    """The ResourceClaim objects a pod uses: named directly (``resourceClaimName``), or made
    for it from a template (``status.resourceClaimStatuses``)."""
    spec, status = pod.get("spec") or {}, pod.get("status") or {}
    direct = [
        str(c["resourceClaimName"])
        for c in spec.get("resourceClaims") or []
        if c.get("resourceClaimName")
    ]
    generated = [
        str(s["resourceClaimName"])
        for s in status.get("resourceClaimStatuses") or []
        if s.get("resourceClaimName")
    ]
    return list(dict.fromkeys([*direct, *generated]))


def pod_devices(pod: dict[str, Any], claims: list[dict[str, Any]]) -> list[ClaimedDevice]:
    """The devices the pod's claims were allocated (``status.allocation.devices.results``);
    a claim counts when the pod names it or the claim is reserved for the pod's uid."""
    meta = pod.get("metadata") or {}
    names, uid = set(claim_names(pod)), meta.get("uid")
    out: list[ClaimedDevice] = []
    for claim in claims:
        cmeta, status = claim.get("metadata") or {}, claim.get("status") or {}
        reserved = {r.get("uid") for r in status.get("reservedFor") or []}
        if cmeta.get("name") not in names and (uid is None or uid not in reserved):
            continue
        results = ((status.get("allocation") or {}).get("devices") or {}).get("results") or []
        out += [
            ClaimedDevice(
                claim=str(cmeta.get("name", "")),
                driver=str(r.get("driver", "")),
                pool=str(r.get("pool", "")),
                device=str(r.get("device", "")),
            )
            for r in results
        ]
    return out


def free_devices(
    slices: list[dict[str, Any]], claims: list[dict[str, Any]]
) -> dict[str, dict[str, int]]:
    """node -> driver -> devices its node-local ResourceSlices publish that no claim was
    allocated (a result's driver, pool and device name one published device)."""
    taken = set()
    for c in claims:
        allocation = (c.get("status") or {}).get("allocation") or {}
        for r in (allocation.get("devices") or {}).get("results") or []:
            taken.add((str(r.get("driver")), str(r.get("pool")), str(r.get("device"))))
    out: dict[str, dict[str, int]] = {}
    for s in slices:
        spec = s.get("spec") or {}
        node, driver = spec.get("nodeName"), str(spec.get("driver", ""))
        pool = str((spec.get("pool") or {}).get("name", ""))
        if not node:
            continue
        per = out.setdefault(str(node), {})
        for d in spec.get("devices") or []:
            free = (driver, pool, str(d.get("name"))) not in taken
            per[driver] = per.get(driver, 0) + (1 if free else 0)
    return out
