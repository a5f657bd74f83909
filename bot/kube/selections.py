"""The pods a label selector picks, as the plans read them: from the pods informer's records
or cut from the API's answer to the same query, the same slim objects either way. Pure.

The plans' surveys (``bot.kube.surveying``) ask for the running peers of a pod (anti-)affinity
term or spread constraint (every namespace) and for an owner's replicas on other nodes (its
namespace, its ``spec.selector``). Both keep only pods bound to a node and not Succeeded or
Failed, and read of each its namespace, name, labels, node, controller reference, whether it
is being deleted and its required pod anti-affinity: exactly what a fleet record
(``bot.kube.tallying.PodRecord``) holds. So an API answer is cut to records first
(``cut``) and an informer's records are selected as the API server would (``select``, with
``bot.kube.selectors``), and both become the same objects (``held_pod``): a plan is the same
whichever served it.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from bot.kube.cutting import PodRecord, pod_record
from bot.kube.selectors import Selector, selects
from bot.kube.tallying import labels_of

Obj = dict[str, Any]
#: what ``held_pod`` writes for ``deletionTimestamp`` (the record keeps only that there is one)
DELETING = "set"


def held_pod(namespace: str, name: str, record: PodRecord) -> Obj | None:
    """The pod as the surveys read it (None: not bound, or Succeeded/Failed)."""
    node, _, _, anti, labels, owner, deleting, _ = record
    if not node:
        return None
    meta: Obj = {"namespace": namespace, "name": name, "labels": dict(labels_of(labels))}
    if owner:
        api_version, kind, owner_name = json.loads(owner)
        meta["ownerReferences"] = [
            {"apiVersion": api_version, "kind": kind, "name": owner_name, "controller": True}
        ]
    if deleting:
        meta["deletionTimestamp"] = DELETING
    spec: Obj = {"nodeName": node}
    if anti is not None:
        spec["affinity"] = anti["spec"]["affinity"]
    return {"metadata": meta, "spec": spec}


def cut(pods: Iterable[Obj]) -> list[Obj]:
    """An API list's pods as ``held_pod`` makes them (those it keeps)."""
    out = []
    for pod in pods:
        meta = pod.get("metadata") or {}
        held = held_pod(meta.get("namespace") or "", meta.get("name") or "", pod_record(pod))
        if held is not None:
            out.append(held)
    return out


def select(records: Iterable[tuple[str, str, PodRecord]], selector: Selector) -> list[Obj]:
    """The records ``selector`` picks, as ``held_pod`` makes them: each distinct label set
    (one string, shared by a ReplicaSet's pods) is matched once."""
    verdicts: dict[str, bool] = {}
    out = []
    for namespace, name, record in records:
        if not record[0]:
            continue
        labels = record[4]
        verdict = verdicts.get(labels)
        if verdict is None:
            verdict = verdicts[labels] = selects(selector, labels_of(labels))
        if verdict and (held := held_pod(namespace, name, record)) is not None:
            out.append(held)
    return out
