"""Events the stand-in's controllers and scheduler record (core/v1 ``Event``), the way
client-go's event recorder writes them: ``involvedObject`` with uid, ``source.component``,
first/last timestamps, and a repeated event (same object, reason and message) counted up
instead of duplicated."""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING, Any

from gpunode_sandbox.kubesim.stamps import suffix

if TYPE_CHECKING:
    from gpunode_sandbox.kubesim.crud import ApiCore

Obj = dict[str, Any]


def record_event(
    api: ApiCore,
    involved: Obj,
    *,
    reason: str,
    message: str,
    type: str = "Warning",
    component: str,
) -> Obj:
    from gpunode_sandbox.kubesim.crud import now_iso

    meta = involved.get("metadata") or {}
    namespace = meta.get("namespace") or "default"
    now = now_iso()
    for event in api.store.list("events", namespace):
        ref = event.get("involvedObject") or {}
        if (
            ref.get("uid") == meta.get("uid")
            and event.get("reason") == reason
            and event.get("message") == message
        ):
            again = copy.deepcopy(event)
            again["count"] = int(again.get("count") or 1) + 1
            again["lastTimestamp"] = now
            return api.store.put("events", again)
    name = f"{meta.get('name', 'object')}.{suffix(reason, message, now, str(api.store.rv), n=16)}"
    return api.store.put(
        "events",
        {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {
                "name": name,
                "namespace": namespace,
                "uid": suffix("uid", name, n=32),
                "creationTimestamp": now,
            },
            "involvedObject": {
                "apiVersion": involved.get("apiVersion", "v1"),
                "kind": involved.get("kind", ""),
                "name": meta.get("name", ""),
                "namespace": namespace,
                "uid": meta.get("uid", ""),
            },
            "reason": reason,
            "message": message,
            "type": type,
            "count": 1,
            "firstTimestamp": now,
            "lastTimestamp": now,
            "source": {"component": component},
            "reportingComponent": component,
            "reportingInstance": "",
        },
    )
