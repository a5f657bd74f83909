"""kube-apiserver's printers (pkg/printers/internalversion) for the kinds the stand-in serves:
the columns of each kind (priority 1 = ``-o wide``) and how one object becomes one row.
``human_duration`` is apimachinery's ``duration.HumanDuration``. Used by ``tables``.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from gpunode_sandbox.kubesim.store import Obj

Column = tuple[str, str, int]  # name, type, priority
Printer = tuple[tuple[Column, ...], Callable[[Obj, datetime], list[Any]]]
NONE = "<none>"


def human_duration(seconds: float) -> str:
    """apimachinery's ``duration.HumanDuration``."""
    s = int(seconds)
    if s < -1:
        return "<invalid>"
    if s < 0:
        return "0s"
    if s < 120:
        return f"{s}s"
    minutes = s // 60
    if minutes < 10:
        return f"{minutes}m{s % 60}s" if s % 60 else f"{minutes}m"
    if minutes < 180:
        return f"{minutes}m"
    hours = s // 3600
    if hours < 8:
        return f"{hours}h{minutes % 60}m" if minutes % 60 else f"{hours}h"
    if hours < 48:
        return f"{hours}h"
    if hours < 24 * 8:
        return f"{hours // 24}d{hours % 24}h" if hours % 24 else f"{hours // 24}d"
    if hours < 24 * 365 * 2:
        return f"{hours // 24}d"
    if hours < 24 * 365 * 8:
        years, days = hours // 24 // 365, (hours // 24) % 365
        return f"{years}y{days}d" if days else f"{years}y"
    return f"{hours // 24 // 365}y"


def _since(stamp: str | None, now: datetime) -> str:
    if not stamp:
        return "<unknown>"
    then = datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
    return human_duration((now - then).total_seconds())


def _age(obj: Obj, now: datetime) -> str:
    return _since(obj["metadata"].get("creationTimestamp"), now)


def _name(obj: Obj) -> str:
    return str(obj["metadata"]["name"])


def _node_row(node: Obj, now: datetime) -> list[Any]:
    status = node.get("status") or {}
    ready = next((c for c in status.get("conditions") or [] if c.get("type") == "Ready"), None)
    text = (
        "Unknown"
        if ready is None or ready.get("status") == "Unknown"
        else ("Ready" if ready.get("status") == "True" else "NotReady")
    )
    if (node.get("spec") or {}).get("unschedulable"):
        text += ",SchedulingDisabled"
    labels = node["metadata"].get("labels") or {}
    roles = sorted(
        k.removeprefix("node-role.kubernetes.io/") or ""
        for k in labels
        if k.startswith("node-role.kubernetes.io/")
    )
    if labels.get("kubernetes.io/role"):
        roles.append(labels["kubernetes.io/role"])
    info = status.get("nodeInfo") or {}
    addresses = {a.get("type"): a.get("address") for a in status.get("addresses") or []}
    return [
        _name(node),
        text,
        ",".join(r for r in roles if r) or NONE,
        _age(node, now),
        info.get("kubeletVersion", ""),
        addresses.get("InternalIP", NONE),
        addresses.get("ExternalIP", NONE),
        info.get("osImage", "<unknown>"),
        info.get("kernelVersion", "<unknown>"),
        info.get("containerRuntimeVersion", "<unknown>"),
    ]


def _pod_row(pod: Obj, now: datetime) -> list[Any]:
    status = pod.get("status") or {}
    spec = pod.get("spec") or {}
    reason = status.get("reason") or status.get("phase") or ""
    restarts, ready, running = 0, 0, False
    last_restart: str | None = None
    for cs in reversed(status.get("containerStatuses") or []):
        restarts += int(cs.get("restartCount") or 0)
        finished = ((cs.get("lastState") or {}).get("terminated") or {}).get("finishedAt")
        if finished and (last_restart is None or finished > last_restart):
            last_restart = finished
        state = cs.get("state") or {}
        waiting, terminated = state.get("waiting") or {}, state.get("terminated")
        if waiting.get("reason"):
            reason = waiting["reason"]
        elif terminated is not None and terminated.get("reason"):
            reason = terminated["reason"]
        elif terminated is not None:
            signal = terminated.get("signal")
            reason = f"Signal:{signal}" if signal else f"ExitCode:{terminated.get('exitCode')}"
        elif cs.get("ready") and "running" in state:
            running = True
            ready += 1
    if reason == "Completed" and running:
        reason = "Running"
    if pod["metadata"].get("deletionTimestamp"):
        reason = "Unknown" if status.get("reason") == "NodeLost" else "Terminating"
    restart_text = str(restarts)
    if restarts and last_restart:
        restart_text = f"{restarts} ({_since(last_restart, now)} ago)"
    return [
        _name(pod),
        f"{ready}/{len(spec.get('containers') or [])}",
        reason,
        restart_text,
        _age(pod, now),
        status.get("podIP") or NONE,
        spec.get("nodeName") or NONE,
        status.get("nominatedNodeName") or NONE,
        NONE,
    ]


def _containers(obj: Obj) -> tuple[str, str]:
    cs = (((obj.get("spec") or {}).get("template") or {}).get("spec") or {}).get("containers")
    cs = cs or []
    return ",".join(c["name"] for c in cs), ",".join(c.get("image", "") for c in cs)


def _selector(obj: Obj) -> str:
    sel = (obj.get("spec") or {}).get("selector") or {}
    terms = [f"{k}={v}" for k, v in sorted((sel.get("matchLabels") or {}).items())]
    for e in sel.get("matchExpressions") or []:
        op, values = e.get("operator"), ",".join(e.get("values") or [])
        shapes = {
            "In": f"{e['key']} in ({values})",
            "NotIn": f"{e['key']} notin ({values})",
            "DoesNotExist": f"!{e['key']}",
        }
        terms.append(shapes.get(op, e["key"]))
    return ",".join(terms) or NONE


def _deployment_row(d: Obj, now: datetime) -> list[Any]:
    st, want = d.get("status") or {}, (d.get("spec") or {}).get("replicas", 1)
    names, images = _containers(d)
    return [
        _name(d),
        f"{st.get('readyReplicas', 0)}/{want}",
        st.get("updatedReplicas", 0),
        st.get("availableReplicas", 0),
        _age(d, now),
        names,
        images,
        _selector(d),
    ]


def _replicaset_row(rs: Obj, now: datetime) -> list[Any]:
    st = rs.get("status") or {}
    names, images = _containers(rs)
    return [
        _name(rs),
        (rs.get("spec") or {}).get("replicas", 1),
        st.get("replicas", 0),
        st.get("readyReplicas", 0),
        _age(rs, now),
        names,
        images,
        _selector(rs),
    ]


def _statefulset_row(ss: Obj, now: datetime) -> list[Any]:
    st = ss.get("status") or {}
    names, images = _containers(ss)
    want = (ss.get("spec") or {}).get("replicas", 1)
    return [_name(ss), f"{st.get('readyReplicas', 0)}/{want}", _age(ss, now), names, images]


def _daemonset_row(ds: Obj, now: datetime) -> list[Any]:
    st = ds.get("status") or {}
    names, images = _containers(ds)
    tmpl = ((ds.get("spec") or {}).get("template") or {}).get("spec") or {}
    node_selector = ",".join(
        f"{k}={v}" for k, v in sorted((tmpl.get("nodeSelector") or {}).items())
    )
    return [
        _name(ds),
        st.get("desiredNumberScheduled", 0),
        st.get("currentNumberScheduled", 0),
        st.get("numberReady", 0),
        st.get("updatedNumberScheduled", 0),
        st.get("numberAvailable", 0),
        node_selector or NONE,
        _age(ds, now),
        names,
        images,
        _selector(ds),
    ]


def _job_row(job: Obj, now: datetime) -> list[Any]:
    st, spec = job.get("status") or {}, job.get("spec") or {}
    conds = {c.get("type") for c in st.get("conditions") or [] if c.get("status") == "True"}
    status = next(
        (s for s in ("Complete", "Failed", "FailureTarget", "Suspended") if s in conds), "Running"
    )
    if status == "FailureTarget":
        status = "Failed"
    completions = spec.get("completions")
    done = f"{st.get('succeeded', 0)}/{completions if completions is not None else 1}"
    start, end = st.get("startTime"), st.get("completionTime")
    if start and end:
        t0 = datetime.strptime(start, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
        t1 = datetime.strptime(end, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
        duration = human_duration((t1 - t0).total_seconds())
    elif start:
        duration = _since(start, now)
    else:
        duration = ""
    names, images = _containers(job)
    return [_name(job), status, done, duration, _age(job, now), names, images, _selector(job)]


def _pdb_row(pdb: Obj, now: datetime) -> list[Any]:
    spec = pdb.get("spec") or {}
    return [
        _name(pdb),
        str(spec["minAvailable"]) if "minAvailable" in spec else "N/A",
        str(spec["maxUnavailable"]) if "maxUnavailable" in spec else "N/A",
        (pdb.get("status") or {}).get("disruptionsAllowed", 0),
        _age(pdb, now),
    ]


def _event_row(ev: Obj, now: datetime) -> list[Any]:
    inv = ev.get("involvedObject") or {}
    last = ev.get("lastTimestamp") or ev.get("eventTime") or ev["metadata"].get("creationTimestamp")
    first = ev.get("firstTimestamp") or last
    source = ev.get("source") or {}
    src = ", ".join(x for x in (source.get("component"), source.get("host")) if x)
    return [
        _since(last, now),
        ev.get("type", ""),
        ev.get("reason", ""),
        f"{str(inv.get('kind', '')).lower()}/{inv.get('name', '')}",
        inv.get("fieldPath", ""),
        src,
        str(ev.get("message", "")).strip(),
        _since(first, now),
        ev.get("count", 1),
        _name(ev),
    ]


def _binding_row(b: Obj, now: datetime) -> list[Any]:
    ref = b.get("roleRef") or {}
    subjects = b.get("subjects") or []

    def of(kind: str) -> str:
        return ", ".join(
            (f"{s.get('namespace', '')}/{s['name']}" if kind == "ServiceAccount" else s["name"])
            for s in subjects
            if s.get("kind") == kind
        )

    return [
        _name(b),
        f"{ref.get('kind')}/{ref.get('name')}",
        _age(b, now),
        of("User"),
        of("Group"),
        of("ServiceAccount"),
    ]


def _col(name: str, kind: str = "string", priority: int = 0) -> Column:
    return (name, kind, priority)


_WIDE_WORKLOAD = (_col("Containers", priority=1), _col("Images", priority=1))
PRINTERS: dict[str, Printer] = {
    "nodes": (
        (
            _col("Name"),
            _col("Status"),
            _col("Roles"),
            _col("Age"),
            _col("Version"),
            _col("Internal-IP", priority=1),
            _col("External-IP", priority=1),
            _col("OS-Image", priority=1),
            _col("Kernel-Version", priority=1),
            _col("Container-Runtime", priority=1),
        ),
        _node_row,
    ),
    "pods": (
        (
            _col("Name"),
            _col("Ready"),
            _col("Status"),
            _col("Restarts"),
            _col("Age"),
            _col("IP", priority=1),
            _col("Node", priority=1),
            _col("Nominated Node", priority=1),
            _col("Readiness Gates", priority=1),
        ),
        _pod_row,
    ),
    "namespaces": (
        (_col("Name"), _col("Status"), _col("Age")),
        lambda o, now: [_name(o), (o.get("status") or {}).get("phase", ""), _age(o, now)],
    ),
    "deployments": (
        (
            _col("Name"),
            _col("Ready"),
            _col("Up-to-date", "integer"),
            _col("Available", "integer"),
            _col("Age"),
            *_WIDE_WORKLOAD,
            _col("Selector", priority=1),
        ),
        _deployment_row,
    ),
    "replicasets": (
        (
            _col("Name"),
            _col("Desired", "integer"),
            _col("Current", "integer"),
            _col("Ready", "integer"),
            _col("Age"),
            *_WIDE_WORKLOAD,
            _col("Selector", priority=1),
        ),
        _replicaset_row,
    ),
    "statefulsets": ((_col("Name"), _col("Ready"), _col("Age"), *_WIDE_WORKLOAD), _statefulset_row),
    "daemonsets": (
        (
            _col("Name"),
            _col("Desired", "integer"),
            _col("Current", "integer"),
            _col("Ready", "integer"),
            _col("Up-to-date", "integer"),
            _col("Available", "integer"),
            _col("Node Selector"),
            _col("Age"),
            *_WIDE_WORKLOAD,
            _col("Selector", priority=1),
        ),
        _daemonset_row,
    ),
    "jobs": (
        (
            _col("Name"),
            _col("Status"),
            _col("Completions"),
            _col("Duration"),
            _col("Age"),
            *_WIDE_WORKLOAD,
            _col("Selector", priority=1),
        ),
        _job_row,
    ),
    "poddisruptionbudgets": (
        (
            _col("Name"),
            _col("Min Available"),
            _col("Max Unavailable"),
            _col("Allowed Disruptions", "integer"),
            _col("Age"),
        ),
        _pdb_row,
    ),
    "priorityclasses": (
        (
            _col("Name"),
            _col("Value", "integer"),
            _col("Global-Default", "boolean"),
            _col("Age"),
            _col("PreemptionPolicy"),
        ),
        lambda o, now: [
            _name(o),
            o.get("value", 0),
            bool(o.get("globalDefault")),
            _age(o, now),
            o.get("preemptionPolicy", ""),
        ],
    ),
    "events": (
        (
            _col("Last Seen"),
            _col("Type"),
            _col("Reason"),
            _col("Object"),
            _col("Subobject", priority=1),
            _col("Source", priority=1),
            _col("Message"),
            _col("First Seen", priority=1),
            _col("Count", "integer", 1),
            _col("Name", priority=1),
        ),
        _event_row,
    ),
    "serviceaccounts": (
        (_col("Name"), _col("Secrets", "integer"), _col("Age")),
        lambda o, now: [_name(o), len(o.get("secrets") or []), _age(o, now)],
    ),
    "leases": (
        (_col("Name"), _col("Holder"), _col("Age")),
        lambda o, now: [_name(o), (o.get("spec") or {}).get("holderIdentity", ""), _age(o, now)],
    ),
    "roles": (
        (_col("Name"), _col("Created At", "date")),
        lambda o, now: [_name(o), o["metadata"].get("creationTimestamp", "")],
    ),
    "clusterroles": (
        (_col("Name"), _col("Created At", "date")),
        lambda o, now: [_name(o), o["metadata"].get("creationTimestamp", "")],
    ),
    "rolebindings": (
        (
            _col("Name"),
            _col("Role"),
            _col("Age"),
            _col("Users", priority=1),
            _col("Groups", priority=1),
            _col("ServiceAccounts", priority=1),
        ),
        _binding_row,
    ),
    "clusterrolebindings": (
        (
            _col("Name"),
            _col("Role"),
            _col("Age"),
            _col("Users", priority=1),
            _col("Groups", priority=1),
            _col("ServiceAccounts", priority=1),
        ),
        _binding_row,
    ),
    "validatingadmissionpolicies": (
        (_col("Name"), _col("Validations", "integer"), _col("ParamKind"), _col("Age")),
        lambda o, now: [
            _name(o),
            len((o.get("spec") or {}).get("validations") or []),
            ((o.get("spec") or {}).get("paramKind") or {}).get("kind") or NONE,
            _age(o, now),
        ],
    ),
    "validatingadmissionpolicybindings": (
        (_col("Name"), _col("PolicyName"), _col("ParamRef"), _col("Age")),
        lambda o, now: [
            _name(o),
            (o.get("spec") or {}).get("policyName", ""),
            ((o.get("spec") or {}).get("paramRef") or {}).get("name") or NONE,
            _age(o, now),
        ],
    ),
}
