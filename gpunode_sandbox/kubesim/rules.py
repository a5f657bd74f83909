"""Admission and update rules the API server enforces beyond the schema.

- Pods: ``priorityClassName`` must name an existing class (403, as the Priority admission
  plugin answers); a client may not set ``spec.priority`` to anything else; extended resources
  (``nvidia.com/gpu``) need request == limit; on update only images, activeDeadlineSeconds,
  tolerations (additions) and terminationGracePeriodSeconds may change (422 with the API
  server's wording); the ``resize`` subresource (>= 1.33) changes only container cpu/memory,
  and on 1.33 lowers a memory limit only for a container whose memory resizePolicy is
  RestartContainer (1.34+: best effort, kubernetes PR #133012).
- PriorityClass: ``value`` and ``preemptionPolicy`` are immutable; ``system-`` names reserved.
- Nodes: ``spec.unschedulable`` keeps the ``node.kubernetes.io/unschedulable:NoSchedule`` taint
  in step, as the node lifecycle controller does (synchronously here).
- Workloads: ``spec.selector`` is immutable.
"""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING, Any

from gpunode_sandbox.kubesim import podadmission as admission
from gpunode_sandbox.kubesim import podsecurity
from gpunode_sandbox.kubesim.resources import Resource
from gpunode_sandbox.kubesim.statuses import ApiError, invalid

if TYPE_CHECKING:
    from gpunode_sandbox.kubesim.crud import ApiCore

Obj = dict[str, Any]
UNSCHEDULABLE_TAINT = "node.kubernetes.io/unschedulable"
POD_UPDATE_MESSAGE = (
    "pod updates may not change fields other than `spec.containers[*].image`,"
    "`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` "
    "(only additions to existing tolerations),`spec.terminationGracePeriodSeconds` "
    "(allow it to be set to 1 if it was previously negative)"
)
STANDARD = ("cpu", "memory", "ephemeral-storage", "pods")


def _forbidden_field(res: Resource, name: str, field: str, message: str) -> ApiError:
    return invalid(
        res.kind,
        name,
        [{"reason": "FieldValueForbidden", "field": field, "message": message}],
        group=res.group,
    )


def check_create(res: Resource, obj: Obj, api: ApiCore) -> None:
    name = obj["metadata"]["name"]
    if res.kind == "Pod":
        spec = obj["spec"]
        pc = spec.get("priorityClassName")
        if pc and pc not in api.priorities():
            raise ApiError(
                403,
                f'pods "{name}" is forbidden: no PriorityClass with name {pc} was found',
                reason="Forbidden",
                name=name,
                kind="pods",
            )
        _check_extended_resources(res, name, spec)
        if not api.seeding:
            ns = (obj.get("metadata") or {}).get("namespace")
            podsecurity.check_pod(api.store.get("namespaces", None, ns) if ns else None, obj)
            admission.check_pod(api, obj)
    if res.kind in ("Deployment", "StatefulSet", "DaemonSet", "ReplicaSet", "Job"):
        tspec = ((obj["spec"].get("template") or {}).get("spec")) or {}
        _check_extended_resources(res, name, tspec, prefix="spec.template.spec")
    if (
        res.kind == "PriorityClass"
        and name.startswith("system-")
        and name not in ("system-node-critical", "system-cluster-critical")
    ):
        raise ApiError(
            403,
            f'priorityclasses.scheduling.k8s.io "{name}" is forbidden: '
            "priority class names with 'system-' prefix are reserved",
        )


def _check_extended_resources(res: Resource, name: str, spec: Obj, prefix: str = "spec") -> None:
    for i, c in enumerate(spec.get("containers") or []):
        r = c.get("resources") or {}
        req, lim = r.get("requests") or {}, r.get("limits") or {}
        for k, v in req.items():
            if k in STANDARD or k.startswith("hugepages-"):
                continue
            if k not in lim:
                raise invalid(
                    res.kind,
                    name,
                    [
                        {
                            "reason": "FieldValueRequired",
                            "field": f"{prefix}.containers[{i}].resources.limits",
                            "message": "Limit must be set for non overcommitable resources",
                        }
                    ],
                )
            if str(lim[k]) != str(v):
                raise invalid(
                    res.kind,
                    name,
                    [
                        {
                            "reason": "FieldValueInvalid",
                            "field": f"{prefix}.containers[{i}].resources.requests",
                            "message": f'Invalid value: "{v}": must be equal to {k} limit '
                            f"of {lim[k]}",
                        }
                    ],
                )


def check_update(res: Resource, old: Obj, new: Obj, api: ApiCore, *, subresource: str) -> None:
    name = old["metadata"]["name"]
    if res.kind == "Pod" and subresource == "resize":
        _check_resize(res, old, new, api)
    elif res.kind == "Pod" and subresource == "":
        _check_pod_update(res, old, new)
    if res.kind == "PriorityClass":
        for f in ("value", "preemptionPolicy"):
            if old.get(f) != new.get(f):
                raise _forbidden_field(res, name, f, "may not be changed in an update.")
    if res.kind in ("Deployment", "StatefulSet", "DaemonSet", "ReplicaSet", "Job") and (
        (old.get("spec") or {}).get("selector") != (new.get("spec") or {}).get("selector")
    ):
        raise _forbidden_field(res, name, "spec.selector", "field is immutable")
    if res.kind == "Node":
        sync_unschedulable_taint(new, now=api_now())


def api_now() -> str:
    from gpunode_sandbox.kubesim.crud import now_iso

    return now_iso()


def _without_mutable(spec: Obj) -> Obj:
    s = copy.deepcopy(spec)
    for key in ("containers", "initContainers"):
        for c in s.get(key) or []:
            c.pop("image", None)
    for k in ("activeDeadlineSeconds", "tolerations", "terminationGracePeriodSeconds"):
        s.pop(k, None)
    return s


def _check_pod_update(res: Resource, old: Obj, new: Obj) -> None:
    name = old["metadata"]["name"]
    o, n = old.get("spec") or {}, new.get("spec") or {}
    if _without_mutable(o) != _without_mutable(n):
        raise _forbidden_field(res, name, "spec", POD_UPDATE_MESSAGE)
    old_tol = o.get("tolerations") or []
    if any(t not in (n.get("tolerations") or []) for t in old_tol):
        raise _forbidden_field(
            res,
            name,
            "spec.tolerations",
            "existing toleration can not be modified except its tolerationSeconds",
        )


def _version_tuple(v: str) -> tuple[int, int]:
    major, minor = v.lstrip("v").split(".")[:2]
    return int(major), int(minor)


def resize_supported(kube_version: str) -> bool:
    return _version_tuple(kube_version) >= (1, 33)


def _check_resize(res: Resource, old: Obj, new: Obj, api: ApiCore) -> None:
    name = old["metadata"]["name"]
    o, n = copy.deepcopy(old.get("spec") or {}), copy.deepcopy(new.get("spec") or {})
    for s in (o, n):
        for c in s.get("containers") or []:
            c.pop("resources", None)
    if o != n:
        raise _forbidden_field(res, name, "spec", "only cpu and memory resources are mutable")
    from gpunode_sandbox.kubesim.defaults import qos_class

    for oc, nc in zip(old["spec"]["containers"], new["spec"]["containers"], strict=True):
        for part in ("requests", "limits"):
            ov = (oc.get("resources") or {}).get(part) or {}
            nv = (nc.get("resources") or {}).get(part) or {}
            if {k: v for k, v in ov.items() if k not in ("cpu", "memory")} != {
                k: v for k, v in nv.items() if k not in ("cpu", "memory")
            }:
                raise _forbidden_field(
                    res,
                    name,
                    f"spec.containers[*].resources.{part}",
                    "only cpu and memory resources are mutable",
                )
    if _version_tuple(api.kube_version) == (1, 33):  # 1.34+ lowers memory limits best effort
        from gpunode_sandbox.kubesim.quantities import to_bytes

        for i, (oc, nc) in enumerate(
            zip(old["spec"]["containers"], new["spec"]["containers"], strict=True)
        ):
            was = ((oc.get("resources") or {}).get("limits") or {}).get("memory")
            now = ((nc.get("resources") or {}).get("limits") or {}).get("memory")
            policy = {
                r.get("resourceName"): r.get("restartPolicy") for r in oc.get("resizePolicy") or []
            }
            if (
                was
                and now
                and to_bytes(now) < to_bytes(was)
                and (policy.get("memory") != "RestartContainer")
            ):
                raise _forbidden_field(
                    res,
                    name,
                    f"spec.containers[{i}].resources.limits[memory]",
                    "memory limits cannot be decreased unless resizePolicy is RestartContainer",
                )
    if qos_class(old) != qos_class(new):
        raise _forbidden_field(
            res,
            name,
            "spec.containers[*].resources",
            "Pod QOS Class may not change as a result of resizing",
        )
    # The kubelet actuates at once in the stand-in: status follows spec, except (1.34+) a
    # memory limit lowered below what the container uses with resizePolicy NotRequired: the
    # kubelet skips it and keeps PodResizeInProgress with reason Error (KEP-1287, k/e#5368).
    from gpunode_sandbox.kubesim.quantities import to_bytes

    usage = api.memory_usage(old) if api.memory_usage is not None else {}
    skipped: list[str] = []
    for cs in (new.get("status") or {}).get("containerStatuses") or []:
        spec_c = next((c for c in new["spec"]["containers"] if c["name"] == cs["name"]), None)
        if spec_c is None:
            continue
        r = spec_c.get("resources") or {}
        limit = (r.get("limits") or {}).get("memory")
        policy = {
            p.get("resourceName"): p.get("restartPolicy") for p in spec_c.get("resizePolicy") or []
        }
        used, wanted = usage.get(cs["name"], 0), to_bytes(limit) if limit else None
        if wanted is not None and used > wanted and policy.get("memory") != "RestartContainer":
            cname = cs["name"]
            skipped.append(f"container {cname}: memory usage {used} exceeds desired limit {wanted}")
            continue
        cs["allocatedResources"] = copy.deepcopy(r.get("requests") or {})
        cs["resources"] = copy.deepcopy(r)
    status = new.setdefault("status", {})
    conditions = [
        c for c in status.get("conditions") or [] if c.get("type") != "PodResizeInProgress"
    ]
    if skipped:
        conditions.append(
            {
                "type": "PodResizeInProgress",
                "status": "True",
                "reason": "Error",
                "message": "; ".join(skipped),
            }
        )
    status["conditions"] = conditions


def sync_unschedulable_taint(node: Obj, *, now: str) -> None:
    spec = node.setdefault("spec", {})
    existing = [t for t in spec.get("taints") or [] if t.get("key") == UNSCHEDULABLE_TAINT]
    taints = [t for t in spec.get("taints") or [] if t.get("key") != UNSCHEDULABLE_TAINT]
    if spec.get("unschedulable"):
        taints.append(
            existing[0]
            if existing
            else {"key": UNSCHEDULABLE_TAINT, "effect": "NoSchedule", "timeAdded": now}
        )
    if taints:
        spec["taints"] = taints
    else:
        spec.pop("taints", None)
