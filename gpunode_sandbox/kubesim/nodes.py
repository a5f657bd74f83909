"""Scenario node -> Node object: kubelet-style labels, conditions with their reasons,
addresses and nodeInfo, all derived from the node's name so reseeding gives the same node.
"""

from __future__ import annotations

import hashlib
from typing import Any

from gpunode_sandbox.kubesim import scenarios as sc
from gpunode_sandbox.kubesim.defaults import stable_uid
from gpunode_sandbox.kubesim.quantities import to_bytes
from gpunode_sandbox.kubesim.stamps import T0, ts

Obj = dict[str, Any]


def _hugepages(n: sc.Node) -> dict[str, str]:
    """``hugepages-<size>`` as the kubelet reports pre-allocated pools (total x size, in
    capacity and allocatable alike); scenario values, when given, win (they are checked)."""
    return {f"hugepages-{p.size}": str(p.total * p.page_bytes) for p in n.hugepages}


def node_object(n: sc.Node) -> Obj:
    labels = {
        "kubernetes.io/hostname": n.name,
        "kubernetes.io/os": "linux",
        "kubernetes.io/arch": "amd64",
        **n.labels,
    }
    if n.gpus:
        labels.setdefault("nvidia.com/gpu.present", "true")  # as GPU feature discovery sets it
        labels.setdefault("nvidia.com/gpu.product", n.gpus.product)
        labels.setdefault("nvidia.com/gpu.count", str(n.gpus.count))
        labels.setdefault("nvidia.com/gpu.memory", str(to_bytes(n.gpus.memory_total) // 2**20))
    conds = {
        "MemoryPressure": "False",
        "DiskPressure": "False",
        "PIDPressure": "False",
        "Ready": "True",
        **n.conditions,
    }
    reasons = {
        "MemoryPressure": ("KubeletHasSufficientMemory", "KubeletHasInsufficientMemory"),
        "DiskPressure": ("KubeletHasNoDiskPressure", "KubeletHasDiskPressure"),
        "PIDPressure": ("KubeletHasSufficientPID", "KubeletHasInsufficientPID"),
        "Ready": ("KubeletNotReady", "KubeletReady"),
    }
    conditions = []
    for t, s in conds.items():
        ok, bad = reasons.get(t, ("", ""))
        reason = bad if s == "True" else ok
        conditions.append(
            {
                "type": t,
                "status": s,
                "reason": reason,
                "message": f"{t} is {s}",
                "lastHeartbeatTime": ts(T0),
                "lastTransitionTime": ts(T0),
            }
        )
    hi, lo = divmod(int(hashlib.sha256(n.name.encode()).hexdigest()[:4], 16) % 60000, 250)
    ip = f"10.0.{hi}.{lo}"
    obj: Obj = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": n.name,
            "labels": labels,
            "uid": stable_uid("node", n.name),
            "annotations": {"node.alpha.kubernetes.io/ttl": "0"},
        },
        "spec": {"podCIDR": "10.244.0.0/24"},
        "status": {
            "capacity": {**_hugepages(n), **{k: str(v) for k, v in n.capacity.items()}},
            "allocatable": {**_hugepages(n), **{k: str(v) for k, v in n.allocatable.items()}},
            "conditions": conditions,
            "addresses": [
                {"type": "InternalIP", "address": ip},
                {"type": "Hostname", "address": n.name},
            ],
            "nodeInfo": {
                "machineID": stable_uid("machine", n.name).replace("-", ""),
                "systemUUID": stable_uid("system", n.name),
                "bootID": stable_uid("boot", n.name),
                "kernelVersion": n.kernel_version,
                "osImage": n.os_image,
                "containerRuntimeVersion": {
                    "containerd": "containerd://1.7.22",
                    "cri-o": "cri-o://1.31.1",
                    "docker": "docker://27.3.1",
                }[n.runtime],
                "kubeletVersion": "v1.35.0",
                "kubeProxyVersion": "v1.35.0",
                "operatingSystem": "linux",
                "architecture": "amd64",
            },
            "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
        },
    }
    if n.unschedulable:
        obj["spec"]["unschedulable"] = True
    return obj
