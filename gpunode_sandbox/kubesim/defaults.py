"""What the API server fills in on create: metadata, pod defaults, controller defaults.

Pure functions over JSON objects (time and ids are arguments).
"""

from __future__ import annotations

import hashlib
import uuid
from typing import Any

Obj = dict[str, Any]

SYSTEM_PRIORITY_CLASSES: tuple[Obj, ...] = (
    {
        "name": "system-node-critical",
        "value": 2_000_001_000,
        "description": "Used for system critical pods that must not be moved from their "
        "current node.",
    },
    {
        "name": "system-cluster-critical",
        "value": 2_000_000_000,
        "description": "Used for system critical pods that must run in the cluster, but can "
        "be moved to another node if necessary.",
    },
)


def stable_uid(*parts: str) -> str:
    """A deterministic UUID from names, so scenario pods keep their UID across runs."""
    return str(uuid.UUID(hashlib.sha256("/".join(parts).encode()).hexdigest()[:32]))


def container_id(*parts: str) -> str:
    """A deterministic 64-hex container id (as containerd/CRI-O print them)."""
    return hashlib.sha256(("cid/" + "/".join(parts)).encode()).hexdigest()


def template_hash(template: Obj) -> str:
    import json

    digest = hashlib.sha256(json.dumps(template, sort_keys=True).encode()).hexdigest()
    return str(int(digest[:8], 16) % 10**10)[:10].rjust(9, "5")[-10:]


def stamp_metadata(obj: Obj, *, now: str, uid: str | None = None) -> None:
    meta = obj.setdefault("metadata", {})
    meta.setdefault(
        "uid",
        uid or stable_uid(obj.get("kind", ""), meta.get("namespace") or "", meta.get("name", "")),
    )
    meta.setdefault("creationTimestamp", now)
    meta["generation"] = 1
    meta.pop("resourceVersion", None)


def _default_requests(containers: list[Obj]) -> None:
    """``SetDefaults_Pod``: a limit without a request defaults the request to the limit."""
    for c in containers:
        res = c.get("resources")
        if not res or not res.get("limits"):
            continue
        req = res.setdefault("requests", {})
        for k, v in res["limits"].items():
            req.setdefault(k, v)


def default_pod(pod: Obj, *, priorities: dict[str, int]) -> None:
    spec = pod.setdefault("spec", {})
    _default_requests(spec.get("containers") or [])
    _default_requests(spec.get("initContainers") or [])
    spec.setdefault("restartPolicy", "Always")
    spec.setdefault("terminationGracePeriodSeconds", 30)
    spec.setdefault("dnsPolicy", "ClusterFirst")
    spec.setdefault("schedulerName", "default-scheduler")
    spec.setdefault("serviceAccountName", "default")
    spec.setdefault("enableServiceLinks", True)
    spec.setdefault("preemptionPolicy", "PreemptLowerPriority")
    for c in spec.get("containers") or []:
        c.setdefault("terminationMessagePath", "/dev/termination-log")
        c.setdefault("terminationMessagePolicy", "File")
        c.setdefault(
            "imagePullPolicy",
            "Always"
            if c.get("image", "").endswith(":latest") or ":" not in c.get("image", "")
            else "IfNotPresent",
        )
        c.setdefault("resources", {})
    spec.setdefault("securityContext", {})
    _default_toleration_seconds(spec)
    name = spec.get("priorityClassName")
    spec["priority"] = priorities.get(name, 0) if name else 0
    status = pod.setdefault("status", {})
    status.setdefault("phase", "Pending")
    status.setdefault("qosClass", qos_class(pod))


#: the DefaultTolerationSeconds admission plugin's taints (its default is 300 s each)
_NODE_PROBLEM_TAINTS = ("node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable")


def _default_toleration_seconds(spec: Obj) -> None:
    """DefaultTolerationSeconds: every pod tolerates a not-ready or unreachable node for
    300 s, unless it already tolerates that taint itself (by key, or every key)."""
    tolerations = spec.setdefault("tolerations", [])
    for key in _NODE_PROBLEM_TAINTS:
        if any(
            (t.get("key") in (key, None, "") and t.get("operator") == "Exists")
            or t.get("key") == key
            for t in tolerations
            if t.get("effect") in (None, "", "NoExecute")
        ):
            continue
        tolerations.append(
            {"key": key, "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}
        )


def qos_class(pod: Obj) -> str:
    """Guaranteed / Burstable / BestEffort from cpu and memory only (pod-qos.md)."""
    containers = (pod.get("spec") or {}).get("containers") or []
    any_set, guaranteed = False, True
    for c in containers:
        res = c.get("resources") or {}
        req, lim = res.get("requests") or {}, res.get("limits") or {}
        for r in ("cpu", "memory"):
            if r in req or r in lim:
                any_set = True
            if r not in lim or (r in req and req[r] != lim[r]):
                guaranteed = False
    if not any_set:
        return "BestEffort"
    return "Guaranteed" if guaranteed else "Burstable"


def _default_strategy(kind: object, spec: Obj) -> None:
    """apps/v1 SetDefaults_Deployment / _StatefulSet / _DaemonSet: the update strategies that
    ``kubectl rollout status`` and clients read back."""
    if kind == "Deployment":
        strategy = spec.setdefault("strategy", {})
        strategy.setdefault("type", "RollingUpdate")
        if strategy["type"] == "RollingUpdate":
            rolling = strategy.setdefault("rollingUpdate", {})
            rolling.setdefault("maxUnavailable", "25%")
            rolling.setdefault("maxSurge", "25%")
        spec.setdefault("progressDeadlineSeconds", 600)
    elif kind == "StatefulSet":
        strategy = spec.setdefault("updateStrategy", {})
        strategy.setdefault("type", "RollingUpdate")
        if strategy["type"] == "RollingUpdate":
            strategy.setdefault("rollingUpdate", {}).setdefault("partition", 0)
        spec.setdefault("podManagementPolicy", "OrderedReady")
        retention = spec.setdefault("persistentVolumeClaimRetentionPolicy", {})
        retention.setdefault("whenDeleted", "Retain")
        retention.setdefault("whenScaled", "Retain")
    elif kind == "DaemonSet":
        strategy = spec.setdefault("updateStrategy", {})
        strategy.setdefault("type", "RollingUpdate")
        if strategy["type"] == "RollingUpdate":
            rolling = strategy.setdefault("rollingUpdate", {})
            rolling.setdefault("maxUnavailable", 1)
            rolling.setdefault("maxSurge", 0)


def default_controller(obj: Obj) -> None:
    """Defaults for workload controllers and Jobs that the schemas and clients expect."""
    kind = obj.get("kind")
    spec = obj.setdefault("spec", {})
    tmpl = spec.get("template") or {}
    tmeta = tmpl.setdefault("metadata", {})
    if kind in ("Deployment", "StatefulSet", "ReplicaSet"):
        spec.setdefault("replicas", 1)
    if kind in ("Deployment", "StatefulSet", "DaemonSet"):
        spec.setdefault("revisionHistoryLimit", 10)
    _default_strategy(kind, spec)
    if kind == "Job":
        uid = obj["metadata"]["uid"]
        labels = tmeta.setdefault("labels", {})
        name = obj["metadata"]["name"]
        for k, v in (
            ("controller-uid", uid),
            ("batch.kubernetes.io/controller-uid", uid),
            ("job-name", name),
            ("batch.kubernetes.io/job-name", name),
        ):
            labels.setdefault(k, v)
        spec.setdefault("selector", {"matchLabels": {"batch.kubernetes.io/controller-uid": uid}})
        spec.setdefault("backoffLimit", 6)
        spec.setdefault("completions", 1)
        spec.setdefault("parallelism", 1)
        spec.setdefault("completionMode", "NonIndexed")
        spec.setdefault("suspend", False)
    status = obj.setdefault("status", {})
    if kind == "StatefulSet":
        status.setdefault("replicas", 0)
    if kind == "ReplicaSet":
        status.setdefault("replicas", 0)
    if kind == "DaemonSet":
        for k in (
            "currentNumberScheduled",
            "desiredNumberScheduled",
            "numberMisscheduled",
            "numberReady",
        ):
            status.setdefault(k, 0)
