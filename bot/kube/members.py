"""The members of a node's training gangs on other nodes, as the plans read them: told from
the pods informer's records or from the API's list of a namespace, the same slim ``PodInfo``
either way. Pure: no I/O (the owner chains come in as data).

``bot.core.model.gangs.gang_of`` tells a pod's gang by its owner chain (a gang owner such as
a JobSet may own the pod through a ``batch/v1`` Job), by its labels, or by Volcano's
PodGroup annotation. A fleet record (``bot.kube.tallying.PodRecord``) keeps all three
cheaply: the labels, the annotations a gang is told by (``marks``) and the pod's direct
controller reference (``owner``), for every pod that is not Succeeded or Failed, bound or
not. What the record cannot hold is the chain above a built-in controller (the Job's own
controller): ``owners`` lists the distinct direct owners, and the caller reads each one's
chain once (``bot.kube.reading.owner_chain``: a GET only for a built-in controller, never
for a gang owner; each controller's own reference kept by ``reading.ControllerRefs``),
however many pods share it.

So an API list is cut to records first (``records``), the informer's records are used as
they are, and ``members`` makes both into the same ``PodInfo``: what the gang notes read
(``bot.core.remedies.safety``): namespace, name, node, labels, the gang annotations, the
owner chain (without uids: a record keeps none) and whether it is being deleted. Its phase
is ``Pending`` when it is on no node and ``Running`` otherwise (a record keeps no phase).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from bot.core.model.cluster import OwnerRef, PodInfo
from bot.core.model.gangs import gang_of
from bot.kube.cutting import PodRecord, pod_record
from bot.kube.tallying import labels_of

Obj = dict[str, Any]
#: (namespace, name, record), as ``Informer.keyed_in`` gives them
Keyed = tuple[str, str, PodRecord]


def records(pods: Iterable[Obj]) -> list[Keyed]:
    """An API list's pods as the informer keeps them."""
    out = []
    for pod in pods:
        meta = pod.get("metadata") or {}
        out.append((meta.get("namespace") or "", meta.get("name") or "", pod_record(pod)))
    return out


def owner_pod(namespace: str, owner: str) -> Obj:
    """A pod as ``owner_chain`` reads it: only its namespace and its controller reference
    (``owner``, a record's ``[apiVersion, kind, name]`` text)."""
    api_version, kind, name = json.loads(owner)
    ref = {"apiVersion": api_version, "kind": kind, "name": name, "controller": True}
    return {"metadata": {"namespace": namespace, "ownerReferences": [ref]}}


def owners(held: Iterable[Keyed], node: str) -> list[str]:
    """The distinct direct owners (record text) of the pods not on ``node``, sorted: the
    chains ``members`` needs."""
    return sorted({r[5] for _, _, r in held if r[0] != node and r[5]})


def member(namespace: str, name: str, record: PodRecord, chain: list[OwnerRef]) -> PodInfo:
    node, _, _, _, labels, _, deleting, marks = record
    return PodInfo(
        namespace=namespace,
        name=name,
        uid="",
        phase="Running" if node else "Pending",
        node_name=node or None,
        labels=dict(labels_of(labels)),
        owners=[o.model_copy(update={"uid": ""}) if o.uid else o for o in chain],
        annotations=json.loads(marks) if marks else {},
        deleting=deleting,
    )


def members(
    held: Iterable[Keyed],
    node: str,
    gangs: Iterable[str],
    chains: Mapping[str, list[OwnerRef]],
) -> list[PodInfo]:
    """The pods of ``held`` not on ``node`` whose gang's key is one of ``gangs``, sorted by
    key; ``chains``: each direct owner's chain (``owners``). A pod's gang is decided once per
    distinct (labels, marks, owner): a ReplicaSet's or a Job's pods share all three."""
    wanted = set(gangs)
    decided: dict[tuple[str, str, str, str], bool] = {}
    out = []
    for namespace, name, record in held:
        if record[0] == node:
            continue
        labels, owner, marks = record[4], record[5], record[7]
        if labels == "{}" and not owner and not marks:
            continue  # nothing tells a gang (a finished pod is held so)
        chain = chains.get(owner, []) if owner else []
        key = (namespace, labels, owner, marks)
        verdict = decided.get(key)
        info = None
        if verdict is None:
            info = member(namespace, name, record, chain)
            gang = gang_of(info)
            verdict = decided[key] = gang is not None and gang.key in wanted
        if verdict:
            out.append(info or member(namespace, name, record, chain))
    return sorted(out, key=lambda p: p.key)
