"""metrics.k8s.io/v1beta1 NodeMetrics and PodMetrics, computed from the scenario's figures.

Memory is the working set (usage - inactive_file), as metrics-server reports from the
kubelet's ``container_memory_working_set_bytes``; node memory adds non-pod processes and
kernel memory the way the root cgroup counts it (anon + file, no slab).

A pod metrics list joins each running pod's item as ``PodMetricTexts`` keeps it: made once
per set of the inputs it is computed from, as metrics-server serves what it scraped rather
than working it out per request.
"""

from __future__ import annotations

from datetime import timedelta
from typing import TYPE_CHECKING, Any

from gpunode_sandbox.kubesim import scenarios as sc
from gpunode_sandbox.kubesim.encoding import encode_bytes
from gpunode_sandbox.kubesim.quantities import to_bytes
from gpunode_sandbox.kubesim.stamps import T0, shift_stamps, ts
from gpunode_sandbox.kubesim.store import ChangedInPlaceError
from gpunode_sandbox.kubesim.usage import figures, replicasets_read

if TYPE_CHECKING:
    from gpunode_sandbox.kubesim.sim import KubeSim

Obj = dict[str, Any]
Key = tuple[str, str]
#: what a kept item was made from besides its pod: each ReplicaSet read, as it was stored
Reads = tuple[tuple[Key, Obj | None], ...]


def _running(pod: Obj) -> bool:
    return (pod.get("status") or {}).get("phase") == "Running"


def running_rows(sim: KubeSim, namespace: str | None) -> list[tuple[Key, Obj]]:
    """(key, stored pod) of the pods metrics-server reports (Running ones), in API order."""
    # scan: the store's keys as already sorted (list sorts them again, 150,000 of them)
    return [(k, pod) for k, pod in sim.api.store.scan("pods", namespace) if _running(pod)]


def running_pods(sim: KubeSim, namespace: str | None) -> list[Obj]:
    """The pods metrics-server reports (Running ones), in API order."""
    return [pod for _, pod in running_rows(sim, namespace)]


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


class PodMetricTexts:
    """Running pods' PodMetrics items as the bytes sent: ``encode_bytes`` of ``pod_metric``,
    the stand-in's clock shift applied, each kept and made again only when an input changed.
    A list of 150,000 pods spent 1.9 s working them out on every request.

    An item is made from (``pod_metric``, ``usage.figures``, ``usage.workload_of``): the pod
    (items live in a ``Store.derived`` dict, which drops a key's item when the key is written
    or removed; one is kept only for the pod stored at its key, and reused only for that same
    object: a list sent while the pod was written lists the pod as it read it), the ReplicaSets its
    controller references name (``usage.replicasets_read``: an item holds the objects it read
    and is reused only while those same objects are stored), the scenario's workloads list
    (``usage``'s index already holds that a list's workloads, frozen models, stay as they are
    while the list is the same object), the stamp and the clock shift (every item is dropped
    when the workloads list is another object, or the stamp or the shift another value).
    With the store's ``check_encoded`` (the suite's ``KUBESIM_CHECK_ENCODED``) a reused item
    is made again and a difference raises ``ChangedInPlaceError``: an input missed here, or a
    stored object changed in place."""

    def __init__(self, sim: KubeSim) -> None:
        self._sim = sim
        self._kept: dict[Key, tuple[bytes, Obj, Reads]] = sim.api.store.derived("pods")
        self._inputs: tuple[list[sc.Workload], str, timedelta] | None = None

    def __len__(self) -> int:
        """How many items are kept (at most one per pod stored)."""
        return len(self._kept)

    def items(self, rows: list[tuple[Key, Obj]], stamp: str) -> list[bytes]:
        """The items of ``rows`` (key, pod stored there when listed), stamped ``stamp``."""
        sim, store, kept = self._sim, self._sim.api.store, self._kept
        workloads, shift = sim.scenario.workloads, sim.clock_shift
        held = self._inputs
        if held is None or held[0] is not workloads or held[1:] != (stamp, shift):
            kept.clear()
            self._inputs = (workloads, stamp, shift)
        get, out = store.get, []
        for key, pod in rows:
            found = kept.get(key)
            if (
                found is not None
                and found[1] is pod  # a list that began before a write lists the pod it read
                and all(get("replicasets", *k) is rs for k, rs in found[2])
            ):
                if store.check_encoded and self._make(pod, stamp, shift) != found[0]:
                    raise ChangedInPlaceError(
                        f"the pod metrics of {'/'.join(key)} differ from ones made afresh: an "
                        "input PodMetricTexts does not count changed, or a stored object was "
                        "changed in place (put a changed copy)"
                    )
                out.append(found[0])
                continue
            reads = tuple((k, get("replicasets", *k)) for k in replicasets_read(pod))
            text = self._make(pod, stamp, shift)
            if get("pods", *key) is pod:  # listed before a write: not the stored one now
                kept[key] = (text, pod, reads)
            out.append(text)
        return out

    def _make(self, pod: Obj, stamp: str, shift: timedelta) -> bytes:
        item = pod_metric(self._sim, pod, stamp)
        return encode_bytes(shift_stamps(item, shift) if shift else item)


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
