"""DRA claims as the control plane leaves them for a running pod (resource.k8s.io/v1).

A workload's ``resource_claims`` name ResourceClaimTemplates (one per name and namespace,
requesting the node's GPU driver's device class). For each pod the resourceclaim controller
makes a ResourceClaim from the template (named ``<pod>-<claim>-<suffix>``, owned by the pod,
annotated ``resource.kubernetes.io/pod-claim-name``) and records it in the pod's
``status.resourceClaimStatuses``; the scheduler allocates it devices of the node's
ResourceSlices (``status.allocation.devices.results``: driver, pool, device) and reserves it
for the pod (``status.reservedFor``). The stand-in allocates the devices whose GPU indices the
pod's own processes use (its model: a process runs on the GPUs its claim gave it), else the
next free one; a pod with no device left keeps an unallocated claim, as a Pending pod would.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from gpunode_sandbox.kubesim import scenarios as sc
from gpunode_sandbox.kubesim.defaults import stable_uid

if TYPE_CHECKING:
    from gpunode_sandbox.kubesim.crud import ApiCore

Obj = dict[str, Any]
API = "resource.k8s.io/v1"
REQUEST = "gpus"


def _request(driver: str, count: int) -> Obj:
    return {
        "name": REQUEST,
        "exactly": {"deviceClassName": driver, "allocationMode": "ExactCount", "count": count},
    }


def template(namespace: str, name: str, driver: str, count: int) -> Obj:
    return {
        "apiVersion": API,
        "kind": "ResourceClaimTemplate",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"spec": {"devices": {"requests": [_request(driver, count)]}}},
    }


def _wanted(w: sc.Workload) -> list[int]:
    return sorted({int(i) for c in w.containers for p in c.processes for i in p.gpu_memory})


class Allocator:
    """Devices of each node's GPU ResourceSlices, handed out as pods are seeded."""

    def __init__(self, nodes: dict[str, sc.Node]) -> None:
        self._free: dict[str, list[tuple[str, int]]] = {
            name: [(rs.driver, i) for rs in n.resource_slices for i in range(rs.devices)]
            for name, n in nodes.items()
        }
        self._templates: set[tuple[str, str]] = set()

    def seed(self, api: ApiCore, w: sc.Workload, pod: Obj) -> None:
        """The pod's claims (and their templates, once), allocated on its node; sets the
        pod's ``status.resourceClaimStatuses`` (call before seeding the pod)."""
        node = (pod.get("spec") or {}).get("nodeName") or ""
        free = self._free.get(node, [])
        driver = free[0][0] if free else "gpu.nvidia.com"
        wanted = (_wanted(w) or [free[0][1]]) if free else _wanted(w)
        meta = pod["metadata"]
        statuses = []
        for claim in w.resource_claims:
            if (w.namespace, claim) not in self._templates:
                self._templates.add((w.namespace, claim))
                api.seed(template(w.namespace, claim, driver, max(len(wanted), 1)), validate=True)
            name = f"{meta['name']}-{claim}-{stable_uid('claim', meta['name'], claim)[:5]}"
            taken = [(d, i) for d, i in free if i in wanted and d == driver]
            obj: Obj = {
                "apiVersion": API,
                "kind": "ResourceClaim",
                "metadata": {
                    "name": name,
                    "namespace": w.namespace,
                    "annotations": {"resource.kubernetes.io/pod-claim-name": claim},
                    "ownerReferences": [
                        {
                            "apiVersion": "v1",
                            "kind": "Pod",
                            "name": meta["name"],
                            "uid": meta["uid"],
                            "controller": True,
                            "blockOwnerDeletion": True,
                        }
                    ],
                },
                "spec": {"devices": {"requests": [_request(driver, max(len(wanted), 1))]}},
            }
            if taken and len(taken) == len(wanted):
                for t in taken:
                    free.remove(t)
                obj["status"] = {
                    "allocation": {
                        "devices": {
                            "results": [
                                {
                                    "request": REQUEST,
                                    "driver": d,
                                    "pool": node,
                                    "device": f"gpu-{i}",
                                }
                                for d, i in taken
                            ]
                        },
                        "nodeSelector": {
                            "nodeSelectorTerms": [
                                {
                                    "matchFields": [
                                        {"key": "metadata.name", "operator": "In", "values": [node]}
                                    ]
                                }
                            ]
                        },
                    },
                    "reservedFor": [{"resource": "pods", "name": meta["name"], "uid": meta["uid"]}],
                }
            api.seed(obj, validate=True)
            statuses.append({"name": claim, "resourceClaimName": name})
        pod.setdefault("status", {})["resourceClaimStatuses"] = statuses
