"""Scenario -> API objects (nodes, namespaces, priority classes, workloads, pods, PDBs, events).

Pod UIDs and container IDs are deterministic from names, so a host tree generated later
matches the API objects. Seeding validates one sample object per template with the strict
schema and bulk-loads the rest unchecked (a 60,000-pod fleet loads in seconds; every object
created or changed later through the API is validated).
"""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from bot.sandbox.kubesim import scenarios as sc
from bot.sandbox.kubesim.defaults import (
    SYSTEM_PRIORITY_CLASSES,
    container_id,
    qos_class,
    stable_uid,
)
from bot.sandbox.kubesim.quantities import to_bytes
from bot.sandbox.kubesim.store import clone

if TYPE_CHECKING:
    from bot.sandbox.kubesim.crud import ApiCore

Obj = dict[str, Any]
RUNTIME_PREFIX = {"containerd": "containerd://", "cri-o": "cri-o://", "docker": "docker://"}
T0 = datetime(2026, 1, 5, 8, 0, tzinfo=UTC)


def ts(dt: datetime) -> str:
    return dt.strftime("%Y-%m-%dT%H:%M:%SZ")


def suffix(*parts: str, n: int = 5) -> str:
    alphabet = "bcdfghjklmnpqrstvwxz2456789"
    h = int(hashlib.sha256("/".join(parts).encode()).hexdigest(), 16)
    out = ""
    for _ in range(n):
        h, r = divmod(h, len(alphabet))
        out += alphabet[r]
    return out


def node_object(n: sc.Node) -> Obj:
    labels = {
        "kubernetes.io/hostname": n.name,
        "kubernetes.io/os": "linux",
        "kubernetes.io/arch": "amd64",
        **n.labels,
    }
    if n.gpus:
        labels.setdefault("nvidia.com/gpu.product", n.gpus.product)
        labels.setdefault("nvidia.com/gpu.count", str(n.gpus.count))
        labels.setdefault("nvidia.com/gpu.memory", str(to_bytes(n.gpus.memory_total) // 2**20))
    conds = {
        "MemoryPressure": "False",
        "DiskPressure": "False",
        "PIDPressure": "False",
        "Ready": "True",
        **n.conditions,
    }
    reasons = {
        "MemoryPressure": ("KubeletHasSufficientMemory", "KubeletHasInsufficientMemory"),
        "DiskPressure": ("KubeletHasNoDiskPressure", "KubeletHasDiskPressure"),
        "PIDPressure": ("KubeletHasSufficientPID", "KubeletHasInsufficientPID"),
        "Ready": ("KubeletNotReady", "KubeletReady"),
    }
    conditions = []
    for t, s in conds.items():
        ok, bad = reasons.get(t, ("", ""))
        reason = bad if s == "True" else ok
        conditions.append(
            {
                "type": t,
                "status": s,
                "reason": reason,
                "message": f"{t} is {s}",
                "lastHeartbeatTime": ts(T0),
                "lastTransitionTime": ts(T0),
            }
        )
    hi, lo = divmod(int(hashlib.sha256(n.name.encode()).hexdigest()[:4], 16) % 60000, 250)
    ip = f"10.0.{hi}.{lo}"
    obj: Obj = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": n.name,
            "labels": labels,
            "uid": stable_uid("node", n.name),
            "annotations": {"node.alpha.kubernetes.io/ttl": "0"},
        },
        "spec": {"podCIDR": "10.244.0.0/24"},
        "status": {
            "capacity": {k: str(v) for k, v in n.capacity.items()},
            "allocatable": {k: str(v) for k, v in n.allocatable.items()},
            "conditions": conditions,
            "addresses": [
                {"type": "InternalIP", "address": ip},
                {"type": "Hostname", "address": n.name},
            ],
            "nodeInfo": {
                "machineID": stable_uid("machine", n.name).replace("-", ""),
                "systemUUID": stable_uid("system", n.name),
                "bootID": stable_uid("boot", n.name),
                "kernelVersion": n.kernel_version,
                "osImage": n.os_image,
                "containerRuntimeVersion": {
                    "containerd": "containerd://1.7.22",
                    "cri-o": "cri-o://1.31.1",
                    "docker": "docker://27.3.1",
                }[n.runtime],
                "kubeletVersion": "v1.35.0",
                "kubeProxyVersion": "v1.35.0",
                "operatingSystem": "linux",
                "architecture": "amd64",
            },
            "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
        },
    }
    if n.unschedulable:
        obj["spec"]["unschedulable"] = True
    return obj


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
    return out


def pod_template(w: sc.Workload) -> Obj:
    labels = {"app": w.name, **w.labels}
    spec: Obj = {"containers": [container_spec(c) for c in w.containers]}
    if w.priority_class:
        spec["priorityClassName"] = w.priority_class
    if w.emptydir:
        spec["volumes"] = [{"name": "scratch", "emptyDir": {}}]
        for c in spec["containers"]:
            c["volumeMounts"] = [{"name": "scratch", "mountPath": "/scratch"}]
    if w.kind == "Job":
        spec["restartPolicy"] = "Never"
    return {"metadata": {"labels": labels}, "spec": spec}


def running_status(
    pod: Obj,
    node: sc.Node | None,
    *,
    phase: str,
    started: datetime,
    restarts: dict[str, tuple[int, str | None]],
) -> Obj:
    uid = pod["metadata"]["uid"]
    statuses = []
    for c in pod["spec"]["containers"]:
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
            st["resources"] = dict(c["resources"])
        statuses.append(st)
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
    if node:
        out["hostIP"] = "10.0.0.1"
        out["podIP"] = f"10.244.{ip_seed % 250}.{ip_seed // 250 % 250 + 2}"
    return out


class Placement:
    """Where each workload's pods go: ``names[i] -> node``, deterministic."""

    @staticmethod
    def pods(w: sc.Workload, all_nodes: list[str]) -> list[tuple[str, str | None]]:
        if w.kind == "DaemonSet":
            targets = w.nodes or all_nodes
            return [(f"{w.name}-{suffix(w.namespace, w.name, n)}", n) for n in targets]
        nodes = w.nodes or [None]  # type: ignore[list-item]
        out: list[tuple[str, str | None]] = []
        for i in range(w.replicas if w.kind != "Pod" else 1):
            node = nodes[i % len(nodes)]
            if w.kind == "StatefulSet":
                name = f"{w.name}-{i}"
            elif w.kind == "Pod":
                name = w.name
            elif w.kind == "Deployment":
                name = f"{w.name}-{rs_hash(w)}-{suffix(w.namespace, w.name, str(i))}"
            else:
                name = f"{w.name}-{suffix(w.namespace, w.name, str(i))}"
            out.append((name, node))
        return out


def rs_hash(w: sc.Workload) -> str:
    return suffix("rs", w.namespace, w.name, n=10)


def seed(api: ApiCore, scenario: sc.Scenario) -> None:
    """Load ``scenario`` into ``api``'s store (see module docstring on validation)."""
    for pc in SYSTEM_PRIORITY_CLASSES:
        api.seed(
            {
                "apiVersion": "scheduling.k8s.io/v1",
                "kind": "PriorityClass",
                "metadata": {"name": pc["name"]},
                "value": pc["value"],
                "description": pc["description"],
            },
            validate=True,
        )
    namespaces = [
        "default",
        "kube-system",
        "kube-public",
        "kube-node-lease",
        "gpunode",
        *scenario.namespaces,
        *(w.namespace for w in scenario.workloads),
    ]
    for ns in dict.fromkeys(namespaces):
        api.seed(
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}},
            validate=ns == "default",
        )
    for pc2 in scenario.priority_classes:
        obj: Obj = {
            "apiVersion": "scheduling.k8s.io/v1",
            "kind": "PriorityClass",
            "metadata": {"name": pc2.name},
            "value": pc2.value,
            "description": pc2.description,
        }
        if pc2.global_default:
            obj["globalDefault"] = True
        api.seed(obj, validate=True)
    for i, n in enumerate(scenario.nodes):
        api.seed(node_object(n), validate=i == 0)
    nodes = {n.name: n for n in scenario.nodes}
    for w in scenario.workloads:
        seed_workload(api, w, nodes)
    for p in scenario.pdbs:
        spec: Obj = {"selector": {"matchLabels": dict(p.selector)}}
        if p.max_unavailable is not None:
            spec["maxUnavailable"] = p.max_unavailable
        else:
            spec["minAvailable"] = p.min_available if p.min_available is not None else 1
        api.seed(
            {
                "apiVersion": "policy/v1",
                "kind": "PodDisruptionBudget",
                "metadata": {"name": p.name, "namespace": p.namespace},
                "spec": spec,
            },
            validate=True,
        )
    for i, e in enumerate(scenario.events):
        api.seed(event_object(e, i, api), validate=i == 0)


def event_object(e: sc.Event, i: int, api: ApiCore) -> Obj:
    plural = {"Pod": "pods", "Node": "nodes"}.get(e.kind, "")
    target = (
        api.store.get(plural, e.namespace if e.kind != "Node" else None, e.name) if plural else None
    )
    when = ts(T0 + timedelta(hours=2) - timedelta(seconds=e.age_s))
    involved: Obj = {"kind": e.kind, "name": e.name, "apiVersion": "v1"}
    if e.kind != "Node":
        involved["namespace"] = e.namespace
    if target is not None:
        involved["uid"] = target["metadata"]["uid"]
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": f"{e.name}.{suffix('ev', str(i), n=8)}", "namespace": e.namespace},
        "involvedObject": involved,
        "reason": e.reason,
        "message": e.message,
        "type": e.type,
        "count": e.count,
        "firstTimestamp": when,
        "lastTimestamp": when,
        "source": {"component": e.component, **({"host": e.host} if e.host else {})},
        "reportingComponent": e.component,
        "reportingInstance": e.host or "",
    }


def seed_workload(api: ApiCore, w: sc.Workload, nodes: dict[str, sc.Node]) -> None:
    tmpl = pod_template(w)
    owner: Obj | None = None
    if w.kind != "Pod":
        api_version = "batch/v1" if w.kind == "Job" else "apps/v1"
        spec: Obj = {"selector": {"matchLabels": {"app": w.name}}, "template": tmpl}
        if w.kind in ("Deployment", "StatefulSet"):
            spec["replicas"] = w.replicas
        if w.kind == "StatefulSet":
            spec["serviceName"] = w.name
        if w.kind == "Job":
            spec.pop("selector")
            spec["manualSelector"] = False
        ctrl = api.seed(
            {
                "apiVersion": api_version,
                "kind": w.kind,
                "metadata": {"name": w.name, "namespace": w.namespace, "labels": {"app": w.name}},
                "spec": spec,
            },
            validate=True,
        )
        owner = ctrl
        if w.kind == "Deployment":
            rs_spec: Obj = {
                "replicas": w.replicas,
                "selector": {"matchLabels": {"app": w.name, "pod-template-hash": rs_hash(w)}},
                "template": {
                    "metadata": {
                        "labels": {**tmpl["metadata"]["labels"], "pod-template-hash": rs_hash(w)}
                    },
                    "spec": tmpl["spec"],
                },
            }
            owner = api.seed(
                {
                    "apiVersion": "apps/v1",
                    "kind": "ReplicaSet",
                    "metadata": {
                        "name": f"{w.name}-{rs_hash(w)}",
                        "namespace": w.namespace,
                        "labels": rs_spec["template"]["metadata"]["labels"],
                        "ownerReferences": [owner_ref(ctrl)],
                    },
                    "spec": rs_spec,
                },
                validate=False,
            )
        set_controller_status(api, owner if w.kind != "Deployment" else ctrl, w)
    restarts = {c.name: (c.restart_count, c.last_terminated_reason) for c in w.containers}
    for i, (name, node_name) in enumerate(Placement.pods(w, list(nodes))):
        pod = pod_from_template(
            tmpl,
            name=name,
            namespace=w.namespace,
            node=node_name,
            owner=owner,
            extra_labels=(
                {"pod-template-hash": rs_hash(w)}
                if w.kind == "Deployment"
                else {"job-name": w.name}
                if w.kind == "Job"
                else {}
            ),
        )
        node = nodes.get(node_name or "")
        phase = w.phase if node is not None else "Pending"
        pod["status"] = running_status(pod, node, phase=phase, started=T0, restarts=restarts)
        api.seed(pod, validate=i == 0)


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
    if owner is not None:
        meta["ownerReferences"] = [owner_ref(owner)]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}


def set_controller_status(api: ApiCore, obj: Obj, w: sc.Workload) -> None:
    n = w.replicas
    if w.kind == "DaemonSet":
        n = len(w.nodes) if w.nodes else len(api.store.list("nodes"))
        obj["status"] = {
            "currentNumberScheduled": n,
            "desiredNumberScheduled": n,
            "numberAvailable": n,
            "numberReady": n,
            "numberMisscheduled": 0,
            "updatedNumberScheduled": n,
            "observedGeneration": 1,
        }
    elif w.kind == "Job":
        obj["status"] = {"active": n, "startTime": ts(T0), "ready": n}
    else:
        obj["status"] = {
            "replicas": n,
            "readyReplicas": n,
            "availableReplicas": n,
            "updatedReplicas": n,
            "observedGeneration": 1,
        }
    api.store.put(
        {
            "Deployment": "deployments",
            "StatefulSet": "statefulsets",
            "DaemonSet": "daemonsets",
            "ReplicaSet": "replicasets",
            "Job": "jobs",
        }[obj["kind"]],
        obj,
    )
