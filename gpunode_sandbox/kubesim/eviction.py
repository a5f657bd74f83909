"""The ``pods/eviction`` subresource with PodDisruptionBudget semantics.

Follows ``EvictionREST.Create`` (kubernetes/pkg/registry/core/pod/storage/eviction.go): a
terminal, Pending or deleting pod is deleted without a PDB check; more than one matching PDB
is a 500; a PDB with no disruptions allowed is a 429 with cause ``DisruptionBudget``
"The disruption budget NAME needs N healthy pods and has M currently". PDB status is computed
from the matching pods whenever it is read (the disruption controller, synchronously).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from gpunode_sandbox.kubesim.resources import STORED
from gpunode_sandbox.kubesim.selectors import match_label_selector
from gpunode_sandbox.kubesim.statuses import ApiError

if TYPE_CHECKING:
    from gpunode_sandbox.kubesim.crud import ApiCore

Obj = dict[str, Any]


def is_healthy(pod: Obj) -> bool:
    status = pod.get("status") or {}
    if status.get("phase") != "Running" or pod["metadata"].get("deletionTimestamp"):
        return False
    return any(
        c.get("type") == "Ready" and c.get("status") == "True"
        for c in status.get("conditions") or []
    )


def _resolve(value: Any, total: int, *, round_up: bool) -> int:
    if isinstance(value, str) and value.endswith("%"):
        frac = int(value[:-1]) * total / 100
        return math.ceil(frac) if round_up else math.floor(frac)
    return int(value)


def pdb_status(api: ApiCore, pdb: Obj) -> Obj:
    """``status`` as the disruption controller would compute it now."""
    ns = pdb["metadata"]["namespace"]
    sel = (pdb.get("spec") or {}).get("selector")
    pods = [
        p
        for p in api.store.list("pods", ns)
        if sel is not None
        and match_label_selector(sel, p["metadata"].get("labels") or {})
        and (p.get("status") or {}).get("phase") not in ("Succeeded", "Failed")
    ]
    expected = len(pods)
    healthy = sum(1 for p in pods if is_healthy(p))
    spec = pdb.get("spec") or {}
    if "maxUnavailable" in spec:
        desired = max(0, expected - _resolve(spec["maxUnavailable"], expected, round_up=True))
    else:
        desired = _resolve(spec.get("minAvailable", 1), expected, round_up=True)
    allowed = max(0, healthy - desired)
    gen = pdb["metadata"].get("generation", 1)
    return {
        "observedGeneration": gen,
        "disruptionsAllowed": allowed,
        "currentHealthy": healthy,
        "desiredHealthy": desired,
        "expectedPods": expected,
        "conditions": [
            {
                "type": "DisruptionAllowed",
                "status": "True" if allowed > 0 else "False",
                "reason": "SufficientPods" if allowed > 0 else "InsufficientPods",
                "message": "",
                "observedGeneration": gen,
                "lastTransitionTime": pdb["metadata"].get("creationTimestamp"),
            }
        ],
    }


def with_status(api: ApiCore, pdb: Obj) -> Obj:
    out = dict(pdb)
    out["status"] = pdb_status(api, pdb)
    return out


def evict(api: ApiCore, namespace: str, name: str, body: Obj, *, dry_run: bool) -> Obj:
    """Evict or refuse; returns the Success Status the API server answers with (201)."""
    pod = api.get("pods", namespace, name)
    opts = (body or {}).get("deleteOptions") or {}
    dry_run = dry_run or "All" in (opts.get("dryRun") or [])
    phase = (pod.get("status") or {}).get("phase")
    ignore_pdb = phase in ("Succeeded", "Failed", "Pending") or bool(
        pod["metadata"].get("deletionTimestamp")
    )
    if not ignore_pdb:
        labels = pod["metadata"].get("labels") or {}
        pdbs = [
            p
            for p in api.store.list("poddisruptionbudgets", namespace)
            if (p.get("spec") or {}).get("selector") is not None
            and match_label_selector(p["spec"]["selector"], labels)
        ]
        if len(pdbs) > 1:
            raise ApiError(
                500,
                "This pod has more than one PodDisruptionBudget, which the "
                "eviction subresource does not support.",
            )
        if pdbs:
            pdb = pdbs[0]
            st = pdb_status(api, pdb)
            unhealthy_ok = pdb["spec"].get(
                "unhealthyPodEvictionPolicy"
            ) == "AlwaysAllow" and not is_healthy(pod)
            if st["disruptionsAllowed"] <= 0 and not unhealthy_ok:
                raise ApiError(
                    429,
                    "Cannot evict pod as it would violate the pod's disruption budget.",
                    reason="TooManyRequests",
                    name=name,
                    kind="pods",
                    causes=[
                        {
                            "reason": "DisruptionBudget",
                            "message": f"The disruption budget {pdb['metadata']['name']} needs "
                            f"{st['desiredHealthy']} healthy pods and has "
                            f"{st['currentHealthy']} currently",
                        }
                    ],
                )
    api.delete(
        STORED["pods"],
        namespace,
        name,
        dry_run=dry_run,
        precondition_rv=(opts.get("preconditions") or {}).get("resourceVersion"),
        grace_period=opts.get("gracePeriodSeconds"),
    )
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201}
