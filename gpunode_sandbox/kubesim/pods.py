"""Pod templates, pods and their statuses, as the seeder and the controllers create them.

Pod UIDs and container IDs are deterministic from names (``defaults.stable_uid`` and
``container_id``), so a host tree generated later matches the API objects.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from gpunode_sandbox.kubesim import scenarios as sc
from gpunode_sandbox.kubesim.defaults import container_id, qos_class, stable_uid
from gpunode_sandbox.kubesim.stamps import ts
from gpunode_sandbox.kubesim.store import clone

Obj = dict[str, Any]
RUNTIME_PREFIX = {"containerd": "containerd://", "cri-o": "cri-o://", "docker": "docker://"}


def container_spec(c: sc.Container) -> Obj:
    out: Obj = {"name": c.name, "image": c.image, "resources": {}}
    if c.command:
        out["command"] = list(c.command)
    if c.requests:
        out["resources"]["requests"] = {k: str(v) for k, v in c.requests.items()}
    if c.limits:
        out["resources"]["limits"] = {k: str(v) for k, v in c.limits.items()}
    if c.env:
        out["env"] = [{"name": k, "value": v} for k, v in c.env.items()]
    if c.resize_policy:
        out["resizePolicy"] = [
            {"resourceName": k, "restartPolicy": v} for k, v in sorted(c.resize_policy.items())
        ]
    if c.restart_policy:
        out["restartPolicy"] = c.restart_policy
    return out


def pod_template(w: sc.Workload) -> Obj:
    labels = {"app": w.name, **w.labels}
    spec: Obj = {"containers": [container_spec(c) for c in w.containers]}
    if w.init_containers:
        spec["initContainers"] = [container_spec(c) for c in w.init_containers]
    if w.priority_class:
        spec["priorityClassName"] = w.priority_class
    volumes: list[tuple[Obj, str]] = []
    if w.emptydir:
        volumes.append(({"name": "scratch", "emptyDir": {}}, "/scratch"))
    if w.shm_size is not None:
        shm = {"medium": "Memory", "sizeLimit": str(w.shm_size)}
        volumes.append(({"name": "dshm", "emptyDir": shm}, "/dev/shm"))
    for mv in w.memory_volumes:
        tmpfs: Obj = {"medium": "Memory"}
        if mv.size_limit is not None:
            tmpfs["sizeLimit"] = str(mv.size_limit)
        volumes.append(({"name": mv.name, "emptyDir": tmpfs}, mv.path))
    if volumes:
        spec["volumes"] = [v for v, _ in volumes]
        for c in [*spec["containers"], *spec.get("initContainers", [])]:
            c["volumeMounts"] = [{"name": v["name"], "mountPath": m} for v, m in volumes]
    if w.kind == "Job":
        spec["restartPolicy"] = "Never"
    if w.resource_claims:
        spec["resourceClaims"] = [
            {"name": n, "resourceClaimTemplateName": n} for n in w.resource_claims
        ]
        for c in spec["containers"]:
            c["resources"]["claims"] = [{"name": n} for n in w.resource_claims]
    spec.update(clone(w.pod_spec))
    meta: Obj = {"labels": labels}
    if w.annotations:
        meta["annotations"] = dict(w.annotations)
    return {"metadata": meta, "spec": spec}


def owner_ref(ctrl: Obj) -> Obj:
    return {
        "apiVersion": ctrl["apiVersion"],
        "kind": ctrl["kind"],
        "name": ctrl["metadata"]["name"],
        "uid": ctrl["metadata"]["uid"],
        "controller": True,
        "blockOwnerDeletion": True,
    }


def pod_from_template(
    tmpl: Obj,
    *,
    name: str,
    namespace: str,
    node: str | None,
    owner: Obj | None,
    extra_labels: dict[str, str] | None = None,
) -> Obj:
    spec = clone(tmpl["spec"])
    if node:
        spec["nodeName"] = node
    meta: Obj = {
        "name": name,
        "namespace": namespace,
        "labels": {**(tmpl.get("metadata") or {}).get("labels", {}), **(extra_labels or {})},
        "uid": stable_uid("pod", namespace, name),
    }
    if annotations := (tmpl.get("metadata") or {}).get("annotations"):
        meta["annotations"] = dict(annotations)
    if owner is not None:
        meta["ownerReferences"] = [owner_ref(owner)]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}


def running_status(
    pod: Obj,
    node: sc.Node | None,
    *,
    phase: str,
    started: datetime,
    restarts: dict[str, tuple[int, str | None]],
) -> Obj:
    uid = pod["metadata"]["uid"]
    statuses: list[Obj] = []
    init_statuses: list[Obj] = []
    sidecars = [
        c for c in pod["spec"].get("initContainers") or [] if c.get("restartPolicy") == "Always"
    ]
    for c in [*pod["spec"]["containers"], *sidecars]:
        cid = container_id(uid, c["name"])
        count, last_reason = restarts.get(c["name"], (0, None))
        st: Obj = {
            "name": c["name"],
            "image": c["image"],
            "imageID": c["image"].split(":")[0] + "@sha256:" + cid[:64],
            "containerID": RUNTIME_PREFIX[node.runtime if node else "containerd"] + cid,
            "ready": phase == "Running",
            "started": phase == "Running",
            "restartCount": count,
            "state": {},
            "lastState": {},
        }
        if phase == "Running":
            st["state"]["running"] = {"startedAt": ts(started)}
        elif phase in ("Succeeded", "Failed"):
            st["state"]["terminated"] = {
                "exitCode": 0 if phase == "Succeeded" else 1,
                "reason": "Completed" if phase == "Succeeded" else "Error",
                "startedAt": ts(started),
                "finishedAt": ts(started + timedelta(minutes=5)),
            }
        else:
            st["state"]["waiting"] = {"reason": "ContainerCreating"}
            st.pop("containerID")
        if last_reason:
            st["lastState"]["terminated"] = {
                "exitCode": 137,
                "reason": last_reason,
                "startedAt": ts(started - timedelta(minutes=40)),
                "finishedAt": ts(started - timedelta(seconds=5)),
            }
        if (c.get("resources") or {}) and phase == "Running":
            st["allocatedResources"] = dict((c["resources"]).get("requests") or {})
            st["resources"] = clone(c["resources"])  # the pod is stored as built: no sharing
        (init_statuses if c in sidecars else statuses).append(st)
    ready = "True" if phase == "Running" else "False"
    when = ts(started)
    conds = [
        {"type": t, "status": s, "lastTransitionTime": when}
        for t, s in (
            ("PodReadyToStartContainers", "True" if phase != "Pending" else "False"),
            ("Initialized", "True"),
            ("Ready", ready),
            ("ContainersReady", ready),
            ("PodScheduled", "True" if node else "False"),
        )
    ]
    ip_seed = int(uid.replace("-", "")[:6], 16)
    out: Obj = {
        "phase": phase,
        "conditions": conds,
        "startTime": when,
        "containerStatuses": statuses,
        "qosClass": qos_class(pod),
    }
    if init_statuses:
        out["initContainerStatuses"] = init_statuses
    if node:
        out["hostIP"] = "10.0.0.1"
        out["podIP"] = f"10.244.{ip_seed % 250}.{ip_seed // 250 % 250 + 2}"
    return out
