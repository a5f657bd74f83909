"""Blame follows the contract: a node's memory against what the scheduler reserved. Pure.

A pod's memory request is its contract with the scheduler. What pods hold inside their
requests was reserved for them; what they hold above (pods without a request: all of it) and
what is held outside pods is what a shortage is made of. ``contract_split`` puts that split,
and the biggest pod rows in the kubelet's eviction order, into the verdict's params
(``contract_*``); ``within_request_note`` names a bigger pod that sits inside its request, so
the verdict can say why it is not the cause. Row arithmetic: ``bot.core.diagnosis.consumers``.
"""

from __future__ import annotations

from bot.core.diagnosis.consumers import (
    Consumer,
    kubelet_rank,
    unreserved_bytes,
    within_request_bytes,
)

Params = dict[str, str | int | float]


def within_request_note(rows: list[Consumer], top: Consumer) -> Params:
    """The largest pod row inside its requests that holds more than the primary: named so
    the verdict says why it is not the cause (its request reserved what it holds)."""
    bigger = [
        r
        for r in rows
        if r.cause == "host_memory_workload"
        and r.bytes > top.bytes
        and _working_set(r) > int(top.params.get("working_set_bytes", top.bytes))
        and unreserved_bytes(r) == 0
        and r.params.get("group_request_bytes", 0)
    ]
    if not bigger:
        return {}
    r = bigger[0]
    # the pod's one figure is its working set; the row (less its own /dev/shm, a row of its
    # own) is what sits inside the request, so the sentence names the /dev/shm beside it
    return {
        "within_request_pod": r.subject,
        "within_request_held_bytes": _working_set(r),
        "within_request_shmem_bytes": int(r.params.get("group_shmem_bytes", 0)),
        "within_request_above_bytes": int(r.params.get("group_working_set_above_request_bytes", 0)),
        "within_request_request_bytes": r.params.get("group_request_bytes", 0),
        "within_request_pods": r.params.get("pods_in_group", 1),
    }


def _eviction_rank(r: Consumer) -> tuple[int, int, int, int]:
    """``kubelet_rank`` by the figures the sentence states: the working set, /dev/shm
    included, against the request (as the kubelet ranks it); the same order as
    ``kubelet_rank`` for a pod row without /dev/shm."""
    above = int(r.params.get("group_working_set_above_request_bytes", unreserved_bytes(r)))
    rank = kubelet_rank(r)
    return (0 if above > 0 else 1, rank[1], -above, -_working_set(r))


def _working_set(r: Consumer) -> int:
    """A pod row's figure as the pod lists state it: its pods' working sets, /dev/shm
    included (the row's own bytes leave the /dev/shm to a row of its own)."""
    return int(r.params.get("group_working_set_bytes", r.bytes))


#: consumers outside pods: no request, every byte of them unseen by the scheduler
_OUTSIDE_PODS = ("system_process", "kernel_slab", "kernel_memory", "hugepages")
_CONTRACT_ROWS = 4


def contract_split(rows: list[Consumer]) -> Params:
    """The node's memory against the scheduler's contract: what pods hold inside and above
    their requests (pods without a request: all above), what is held outside pods, and the
    biggest pod rows in the kubelet's eviction order (``contract_N_*``)."""
    # pods the API view does not know (pod-uid/...: gpunode's own diagnostic pod, or a pod
    # that just left) have no request anyone can read or change: left out of the split
    known = [r for r in rows if not r.subject.startswith("pod-uid/")]
    pods = [r for r in known if r.cause == "host_memory_workload"]
    pod_shmem = [r for r in known if r.cause == "shmem" and r.subject != "host"]
    outside = [
        r for r in rows if r.cause in _OUTSIDE_PODS or (r.cause, r.subject) == ("shmem", "host")
    ]
    no_request = [r for r in pods if not r.params.get("group_request_bytes", 0)]
    params: Params = {
        "contract_above_bytes": sum(unreserved_bytes(r) for r in [*pods, *pod_shmem]),
        "contract_within_bytes": sum(within_request_bytes(r) for r in [*pods, *pod_shmem]),
        "contract_no_request_bytes": sum(r.bytes for r in no_request),
        "contract_no_request_count": sum(int(r.params.get("pods_in_group", 1)) for r in no_request),
        "contract_above_count": sum(1 for r in pods if unreserved_bytes(r) > 0),
        "contract_outside_bytes": sum(r.bytes for r in outside),
    }
    big = sorted((r for r in pods if r.bytes > 0), key=lambda r: -r.bytes)[:_CONTRACT_ROWS]
    for i, r in enumerate(sorted(big, key=_eviction_rank), start=1):
        params[f"contract_{i}_subject"] = str(r.params.get("group", r.subject))
        params[f"contract_{i}_pods"] = int(r.params.get("pods_in_group", 1))
        params[f"contract_{i}_held_bytes"] = _working_set(r)
        params[f"contract_{i}_shmem_bytes"] = int(r.params.get("group_shmem_bytes", 0))
        params[f"contract_{i}_request_bytes"] = int(r.params.get("group_request_bytes", 0))
        params[f"contract_{i}_above_bytes"] = unreserved_bytes(r)
        params[f"contract_{i}_working_set_above_bytes"] = int(
            r.params.get("group_working_set_above_request_bytes", unreserved_bytes(r))
        )
    params["contract_rows"] = len(big)
    return params
