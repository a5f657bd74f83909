"""Kueue's LocalQueue and ClusterQueue (``kueue.x-k8s.io``) -> ``QueueInfo``. ``parse_*`` is
pure; ``read_*`` calls the API (run in threads by the gateway).

Kueue reports a ClusterQueue's use in ``status.flavorsUsage[].resources[].total`` and its
quota in ``spec.resourceGroups[].flavors[].resources[]`` (``nominalQuota``, and
``borrowingLimit`` when the queue is in a cohort: without a limit it may borrow whatever the
cohort has free, which this read cannot see, so such a resource is never called exhausted).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from bot.core.model.quantity import parse_quantity
from bot.core.model.workloads import KueueWorkload, QueueInfo
from bot.kube.transport import Transport

GROUP = "kueue.x-k8s.io"
Obj = Mapping[str, Any]


def _value(text: Any) -> float:
    return parse_quantity(str(text)).as_float()


def exhausted_resources(cluster_queue: Obj) -> list[str]:
    """The resources whose usage, summed over flavors, has reached what the queue may use."""
    spec, status = cluster_queue.get("spec") or {}, cluster_queue.get("status") or {}
    in_cohort = bool(spec.get("cohort") or spec.get("cohortName"))
    quota: dict[str, float] = {}
    unbounded: set[str] = set()
    for group in spec.get("resourceGroups") or []:
        for flavor in group.get("flavors") or []:
            for r in flavor.get("resources") or []:
                name = str(r.get("name", ""))
                limit = _value(r.get("nominalQuota", 0))
                if in_cohort and r.get("borrowingLimit") is None:
                    unbounded.add(name)
                elif in_cohort:
                    limit += _value(r["borrowingLimit"])
                quota[name] = quota.get(name, 0.0) + limit
    used: dict[str, float] = {}
    for flavor in status.get("flavorsUsage") or []:
        for r in flavor.get("resources") or []:
            name = str(r.get("name", ""))
            used[name] = used.get(name, 0.0) + _value(r.get("total", 0))
    return sorted(n for n, q in quota.items() if n not in unbounded and used.get(n, 0.0) >= q)


def parse_queue(local: Obj, cluster: Obj | None) -> QueueInfo:
    meta = local.get("metadata") or {}
    return QueueInfo(
        namespace=str(meta.get("namespace", "")),
        name=str(meta.get("name", "")),
        cluster_queue=(local.get("spec") or {}).get("clusterQueue"),
        pending_workloads=int(((cluster or {}).get("status") or {}).get("pendingWorkloads") or 0),
        exhausted=exhausted_resources(cluster) if cluster is not None else [],
    )


def _condition(obj: Obj, kind: str) -> Obj | None:
    return next(
        (c for c in (obj.get("status") or {}).get("conditions") or [] if c.get("type") == kind),
        None,
    )


def parse_workload(obj: Obj, pods: list[str]) -> KueueWorkload:
    """A Workload's admission (``status.admission``, condition ``Admitted``), its pods'
    readiness as Kueue tracks it (condition ``PodsReady``), and its evictions (condition
    ``Evicted``, ``status.requeueState.count``)."""
    meta, status = obj.get("metadata") or {}, obj.get("status") or {}
    admitted, ready, evicted = (
        _condition(obj, "Admitted"),
        _condition(obj, "PodsReady"),
        _condition(obj, "Evicted"),
    )
    return KueueWorkload(
        namespace=str(meta.get("namespace", "")),
        name=str(meta.get("name", "")),
        pods=pods,
        cluster_queue=(status.get("admission") or {}).get("clusterQueue"),
        admitted=bool(admitted and admitted.get("status") == "True"),
        pods_ready=None if ready is None else ready.get("status") == "True",
        evicted_reason=str(evicted.get("reason") or "")
        if evicted and evicted.get("status") == "True"
        else None,
        requeue_count=int((status.get("requeueState") or {}).get("count") or 0),
    )


def owns(workload: Obj, kind: str, name: str, uid: str) -> bool:
    """Whether ``workload`` is owner-referenced to the object (by uid, else kind and name):
    Kueue's job integrations make the job (Job, JobSet, PyTorchJob...) own its Workload, and
    its pod integration the pod itself."""
    for ref in (workload.get("metadata") or {}).get("ownerReferences") or []:
        if uid and ref.get("uid") == uid:
            return True
        if ref.get("kind") == kind and ref.get("name") == name:
            return True
    return False


def list_workloads(t: Transport, version: str, namespace: str) -> list[Any]:
    return t.list_all(f"/apis/{GROUP}/{version}/namespaces/{namespace}/workloads")


def read_local_queue(t: Transport, version: str, namespace: str, name: str) -> Any:
    return t.get(f"/apis/{GROUP}/{version}/namespaces/{namespace}/localqueues/{name}")


def read_cluster_queue(t: Transport, version: str, name: str) -> Any:
    return t.get(f"/apis/{GROUP}/{version}/clusterqueues/{name}")
