"""metrics.k8s.io/v1beta1 NodeMetrics and PodMetrics, computed from the scenario's figures.

Memory is the working set (usage - inactive_file), as metrics-server reports from the
kubelet's ``container_memory_working_set_bytes``; node memory adds non-pod processes and
kernel memory the way the root cgroup counts it (anon + file, no slab).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from gpunode_sandbox.kubesim.quantities import to_bytes
from gpunode_sandbox.kubesim.stamps import T0, ts
from gpunode_sandbox.kubesim.usage import figures

if TYPE_CHECKING:
    from gpunode_sandbox.kubesim.sim import KubeSim

Obj = dict[str, Any]


def _running(pod: Obj) -> bool:
    return (pod.get("status") or {}).get("phase") == "Running"


def running_pods(sim: KubeSim, namespace: str | None) -> list[Obj]:
    """The pods metrics-server reports (Running ones), in API order."""
    # scan: the store's keys as already sorted (list sorts them again, 150,000 of them)
    return [pod for _, pod in sim.api.store.scan("pods", namespace) if _running(pod)]


def pod_metric(sim: KubeSim, pod: Obj, stamp: str) -> Obj:
    """One running pod's PodMetrics (``stamp``: its timestamp and creationTimestamp)."""
    return {
        "metadata": {
            "name": pod["metadata"]["name"],
            "namespace": pod["metadata"]["namespace"],
            "labels": pod["metadata"].get("labels") or {},
            "creationTimestamp": stamp,
        },
        "timestamp": stamp,
        "window": "15s",
        "containers": [
            {
                "name": n,
                "usage": {
                    "cpu": f"{f.cpu_m * 1000000}n",
                    "memory": f"{f.working_set // 1024}Ki",
                },
            }
            for n, f in figures(sim, pod).items()
        ],
    }


def pod_metrics(sim: KubeSim, namespace: str | None) -> list[Obj]:
    stamp = ts(T0)  # one stamp for every item, formatted once
    return [pod_metric(sim, pod, stamp) for pod in running_pods(sim, namespace)]


def node_metrics(sim: KubeSim) -> list[Obj]:
    per_node: dict[str, tuple[int, int]] = {}
    for pod in sim.api.store.list("pods"):
        node = (pod.get("spec") or {}).get("nodeName")
        if not node or not _running(pod):
            continue
        cpu, mem = per_node.get(node, (0, 0))
        for f in figures(sim, pod).values():
            cpu, mem = cpu + f.cpu_m, mem + f.working_set
        per_node[node] = (cpu, mem)
    items = []
    for n in sim.api.store.list("nodes"):
        name = n["metadata"]["name"]
        spec = sim.scenario.node(name)
        cpu, mem = per_node.get(name, (0, 0))
        if spec is not None:
            mem += to_bytes(spec.kernel.system_anon) + to_bytes(spec.kernel.page_cache) // 2
        items.append(
            {
                "metadata": {
                    "name": name,
                    "labels": n["metadata"].get("labels") or {},
                    "creationTimestamp": ts(T0),
                },
                "timestamp": ts(T0),
                "window": "20s",
                "usage": {"cpu": f"{cpu * 1000000}n", "memory": f"{mem // 1024}Ki"},
            }
        )
    return items
