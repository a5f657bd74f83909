"""Sync reads (run in threads by the gateway) for watching an action land: a controller's
rollout (which pods run its current template, and why the others do not) and whether
evicted pods are gone. Judged in ``bot.core.remedies.watching``.

A pod "runs the current template" when its priorityClassName and, per template container,
its resources and literal env values equal the template's: that is what gpunode's patches
change, and it needs no revision hashes (which a StatefulSet and a Deployment keep in
different places).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kubernetes.client.exceptions import ApiException

from bot.core.model.quantity import QuantityError, parse_quantity
from bot.core.remedies.watching import PodProgress, RolloutProgress
from bot.kube.patching import read_controller
from bot.kube.transport import Transport

Obj = dict[str, Any]
PROBLEM_REASONS = ("FailedCreate", "FailedScheduling")


def _same(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    if set(a) != set(b):
        return False
    for key, value in a.items():
        try:
            if parse_quantity(str(value)).cmp(parse_quantity(str(b[key]))) != 0:
                return False
        except QuantityError:
            if str(value) != str(b[key]):
                return False
    return True


def runs_template(pod: Obj, template: Obj) -> bool:
    spec, tspec = pod.get("spec") or {}, template.get("spec") or {}
    if (spec.get("priorityClassName") or None) != (tspec.get("priorityClassName") or None):
        return False
    pods = {c.get("name"): c for c in spec.get("containers") or []}
    for tc in tspec.get("containers") or []:
        pc = pods.get(tc.get("name"))
        if pc is None:
            return False
        tr, pr = tc.get("resources") or {}, pc.get("resources") or {}
        for part in ("limits", "requests"):
            if not _same(tr.get(part) or {}, pr.get(part) or {}) and (
                part == "limits" or tr.get(part)
            ):
                return False
        tenv = {e.get("name"): e.get("value") for e in tc.get("env") or [] if "value" in e}
        penv = {e.get("name"): e.get("value") for e in pc.get("env") or [] if "value" in e}
        if tenv != penv:
            return False
    return True


def _why_not_running(pod: Obj) -> str | None:
    status = pod.get("status") or {}
    for cond in status.get("conditions") or []:
        if cond.get("type") == "PodScheduled" and cond.get("status") == "False":
            return f"{cond.get('reason') or 'Unschedulable'}: {cond.get('message') or ''}".strip()
    for cs in status.get("containerStatuses") or []:
        waiting = (cs.get("state") or {}).get("waiting") or {}
        if waiting.get("reason") and waiting["reason"] != "ContainerCreating":
            return f"{waiting['reason']}: {waiting.get('message') or ''}".strip(": ")
    return None


def _ready(pod: Obj) -> bool:
    conditions = (pod.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)


def _owned_by(pod: Obj, uids: set[str]) -> bool:
    return any(
        r.get("controller") and r.get("uid") in uids
        for r in (pod.get("metadata") or {}).get("ownerReferences") or []
    )


def rollout_progress(
    t: Transport, kind: str, namespace: str, name: str, *, since: str
) -> RolloutProgress:
    """The controller's pods and the problems reported since ``since`` (RFC 3339)."""
    ctrl = read_controller(t, kind, namespace, name)
    spec = ctrl.get("spec") or {}
    uids = {str((ctrl.get("metadata") or {}).get("uid"))}
    selector = ",".join(
        f"{k}={v}"
        for k, v in sorted(((spec.get("selector") or {}).get("matchLabels") or {}).items())
    )
    pods = t.list_all(f"/api/v1/namespaces/{namespace}/pods", label_selector=selector or None)
    involved = {name}
    if kind == "Deployment":  # pods belong to its ReplicaSets
        for pod in pods:
            for ref in (pod.get("metadata") or {}).get("ownerReferences") or []:
                if ref.get("controller") and ref.get("kind") == "ReplicaSet":
                    try:
                        rs = t.get(
                            f"/apis/apps/v1/namespaces/{namespace}/replicasets/{ref['name']}"
                        )
                    except ApiException:
                        continue
                    if _owned_by(rs, uids):
                        uids.add(str(ref.get("uid")))
                        involved.add(str(ref["name"]))
    mine = [
        p
        for p in pods
        if _owned_by(p, uids)
        and not (p.get("metadata") or {}).get("deletionTimestamp")
        and (p.get("status") or {}).get("phase") not in ("Succeeded", "Failed")
    ]
    template = spec.get("template") or {}
    events = t.list_all(f"/api/v1/namespaces/{namespace}/events")
    if kind == "Deployment":  # a new ReplicaSet whose pods all failed to be created has none
        for e in events:
            ref = e.get("involvedObject") or {}
            rs = str(ref.get("name") or "")
            if ref.get("kind") != "ReplicaSet" or rs in involved or not rs.startswith(f"{name}-"):
                continue
            try:
                obj = t.get(f"/apis/apps/v1/namespaces/{namespace}/replicasets/{rs}")
            except ApiException:
                continue
            if _owned_by(obj, uids):
                involved.add(rs)
    names = involved | {(p.get("metadata") or {}).get("name") for p in mine}
    problems = [
        f"{e.get('reason')}: {e.get('message') or ''}"
        for e in events
        if e.get("reason") in PROBLEM_REASONS
        and (e.get("involvedObject") or {}).get("name") in names
        and str(e.get("lastTimestamp") or e.get("eventTime") or "") >= since
    ]
    strategy = spec.get("strategy") or spec.get("updateStrategy") or {}
    return RolloutProgress(
        kind=kind,
        namespace=namespace,
        name=name,
        desired=int(spec.get("replicas", 1)),
        strategy=strategy.get("type"),
        pods=[
            PodProgress(
                key=f"{namespace}/{p['metadata']['name']}",
                node=(p.get("spec") or {}).get("nodeName"),
                phase=(p.get("status") or {}).get("phase") or "Pending",
                ready=_ready(p),
                current=runs_template(p, template),
                reason=_why_not_running(p),
            )
            for p in sorted(mine, key=lambda p: p["metadata"]["name"])
        ],
        problems=problems[-5:],
    )


def resize_progress(t: Transport, namespace: str, name: str, container: str) -> RolloutProgress:
    """An in-place resize as a one-pod rollout: *current* once the kubelet actuated it (the
    container's status resources equal its spec), the PodResizePending/PodResizeInProgress
    condition's message as the reason while it has not."""
    pod = t.get(f"/api/v1/namespaces/{namespace}/pods/{name}")
    spec: Obj = next(
        (c for c in (pod.get("spec") or {}).get("containers") or [] if c.get("name") == container),
        {},
    )
    status = pod.get("status") or {}
    actual: Obj = next(
        (c for c in status.get("containerStatuses") or [] if c.get("name") == container), {}
    )
    want, have = spec.get("resources") or {}, actual.get("resources") or {}
    done = all(_same(want.get(k) or {}, have.get(k) or {}) for k in ("limits", "requests"))
    reason = next(
        (
            f"{c.get('type')}: {c.get('reason') or ''} {c.get('message') or ''}".strip()
            for c in status.get("conditions") or []
            if c.get("type") in ("PodResizePending", "PodResizeInProgress")
            and c.get("status") == "True"
        ),
        None,
    )
    return RolloutProgress(
        kind="Pod",
        namespace=namespace,
        name=name,
        desired=1,
        pods=[
            PodProgress(
                key=f"{namespace}/{name}",
                node=(pod.get("spec") or {}).get("nodeName"),
                phase=status.get("phase") or "Pending",
                ready=_ready(pod),
                current=done,
                reason=reason,
            )
        ],
    )


def pods_present(t: Transport, pods: list[tuple[str, str, str]]) -> list[str]:
    """Keys of the (namespace, name, uid) pods that still exist with that uid."""
    left = []
    for namespace, name, uid in pods:
        try:
            pod = t.get(f"/api/v1/namespaces/{namespace}/pods/{name}")
        except ApiException as exc:
            if exc.status == 404:
                continue
            raise
        if not uid or (pod.get("metadata") or {}).get("uid") == uid:
            left.append(f"{namespace}/{name}")
    return left
