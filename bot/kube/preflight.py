"""Before and around the diagnostic Job: is GPU evidence possible, and why did no pod appear.

- ``read_runtime_class``: does the RuntimeClass the collector asks for exist
  (``node.k8s.io/v1``)? A pod naming a missing class is refused by the API server's
  RuntimeClass admission ("pod rejected: RuntimeClass ... not found"), so the bot checks first
  and runs the collector without it (host evidence still comes) instead of failing.
- what the Job asks for on a GPU node, and the gap when NVML gives nothing: ``gpuevidence``.
- ``create_failures``: the Job controller's ``FailedCreate`` events (quota, policy engines,
  admission webhooks): the only trace a pod that was never created leaves.

Sync functions for the gateway's threads; kubernetes errors are translated by the gateway.
"""

from __future__ import annotations

from typing import Any, Literal

from kubernetes.client.exceptions import ApiException

from bot.kube.transport import Transport

RuntimeClassState = Literal["present", "missing", "unknown"]


def read_runtime_class(t: Transport, name: str) -> RuntimeClassState:
    """``present``/``missing``; ``unknown`` when the bot may not read it (403) or the
    server does not serve ``node.k8s.io`` (then the Job's own result tells)."""
    try:
        t.get(f"/apis/node.k8s.io/v1/runtimeclasses/{name}")
    except ApiException as exc:
        if exc.status == 404:
            body = str(exc.body or "")
            # a 404 for the whole group (not served) says nothing about the class
            return "missing" if "runtimeclasses" in body or not body else "unknown"
        if exc.status in (401, 403):
            return "unknown"
        raise
    return "present"


def create_failures(t: Transport, namespace: str, job: str) -> list[str]:
    """Messages of the Job's ``FailedCreate`` events, newest last."""
    listing = t.get(
        f"/api/v1/namespaces/{namespace}/events",
        field_selector=f"involvedObject.kind=Job,involvedObject.name={job}",
    )
    items: list[Any] = [
        e
        for e in listing.get("items") or []
        if e.get("reason") == "FailedCreate" and (e.get("involvedObject") or {}).get("name") == job
    ]
    items.sort(key=lambda e: str(e.get("lastTimestamp") or e.get("eventTime") or ""))
    return [str(e.get("message") or "") for e in items]
