"""Events the stand-in's controllers and kubelet record, shaped like client-go's recorder:
one Event per (object, reason, message); a repeat bumps ``count`` and ``lastTimestamp``."""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING, Any

from gpunode_sandbox.kubesim.crud import now_iso
from gpunode_sandbox.kubesim.defaults import stable_uid
from gpunode_sandbox.kubesim.resources import STORED

if TYPE_CHECKING:
    from gpunode_sandbox.kubesim.crud import ApiCore

Obj = dict[str, Any]


def record(
    api: ApiCore,
    obj: Obj,
    reason: str,
    message: str,
    *,
    component: str,
    host: str | None = None,
    type_: str = "Warning",
) -> None:
    meta = obj["metadata"]
    ns = meta.get("namespace") or "default"
    name = f"{meta['name']}.{stable_uid('event', reason, message)[:16].replace('-', '')}"
    now = now_iso()
    old = api.store.get("events", ns, name)
    if old is not None:
        new = copy.deepcopy(old)
        new["count"] = int(new.get("count") or 1) + 1
        new["lastTimestamp"] = now
        api.store.put("events", new)
        return
    involved: Obj = {
        "apiVersion": obj.get("apiVersion", "v1"),
        "kind": obj.get("kind", ""),
        "name": meta["name"],
        "uid": meta.get("uid", ""),
    }
    if meta.get("namespace"):
        involved["namespace"] = meta["namespace"]
    api.create(
        STORED["events"],
        ns,
        {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"name": name, "namespace": ns},
            "involvedObject": involved,
            "reason": reason,
            "message": message,
            "type": type_,
            "count": 1,
            "firstTimestamp": now,
            "lastTimestamp": now,
            "source": {"component": component, **({"host": host} if host else {})},
            "reportingComponent": component,
            "reportingInstance": host or "",
        },
    )
