"""API JSON -> ``bot.core.model.cluster`` models. Pure (``parse_*``); no client calls here.

Quantities keep the API's text; the parsed pod totals come from ``bot.core.diagnosis.allocation`` so
they match what kubectl shows.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from bot.core.diagnosis.allocation import pod_requests_and_limits
from bot.core.model.cluster import (
    USED_ENV_KEYS,
    BudgetInfo,
    ClaimedDevice,
    Condition,
    ContainerInfo,
    EventInfo,
    NodeInfo,
    OwnerRef,
    PodInfo,
    PodMetrics,
    PriorityClassInfo,
    Taint,
    is_accelerator_resource,
)
from bot.core.model.cluster import (
    is_gpu_node as core_is_gpu_node,
)
from bot.core.model.evidence import QosTier
from bot.core.model.gangs import ANNOTATION_KEYS
from bot.core.model.quantity import parse_quantity
from bot.core.remedies.autoscalers import POD_ANNOTATIONS
from bot.kube.cutting import KEPT_NODE_ANNOTATIONS as KEPT_NODE_ANNOTATIONS
from bot.kube.cutting import controller_ref as controller_ref
from bot.kube.cutting import pod_working_set as pod_working_set
from bot.kube.scheduling import parse_scheduling, parse_selector

GPU_RESOURCE = "nvidia.com/gpu"
GPU_PRODUCT_LABEL = "nvidia.com/gpu.product"
MIRROR_ANNOTATION = "kubernetes.io/config.mirror"
#: pod annotations kept on PodInfo (gangs and tier 1 read them; the rest may be large or
#: secret)
KEPT_ANNOTATIONS = frozenset(ANNOTATION_KEYS) | frozenset(POD_ANNOTATIONS)
_CONTAINER_ID = re.compile(r"^[a-z0-9.-]+://([0-9a-f]{64})$")
_QOS: dict[str, QosTier] = {
    "Guaranteed": "guaranteed",
    "Burstable": "burstable",
    "BestEffort": "besteffort",
}

Obj = Mapping[str, Any]


def parse_time(value: Any) -> datetime | None:
    if not value or not isinstance(value, str):
        return None
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None


def _meta(obj: Obj) -> Obj:
    return obj.get("metadata") or {}


def parse_node(node: Obj, *, dra_drivers: list[str] | None = None) -> NodeInfo:
    """``dra_drivers``: the drivers with ResourceSlices for this node (``bot.kube.dra``)."""
    meta, spec, status = _meta(node), node.get("spec") or {}, node.get("status") or {}
    conditions = [
        Condition(
            type=c.get("type", ""),
            status=c.get("status", "Unknown"),
            reason=c.get("reason"),
            message=c.get("message"),
            last_transition_time=parse_time(c.get("lastTransitionTime")),
        )
        for c in status.get("conditions") or []
    ]
    ready = any(c.type == "Ready" and c.status == "True" for c in conditions)
    info = status.get("nodeInfo") or {}
    labels = dict(meta.get("labels") or {})
    return NodeInfo(
        name=meta.get("name", ""),
        uid=meta.get("uid", ""),
        labels=labels,
        capacity={k: str(v) for k, v in (status.get("capacity") or {}).items()},
        allocatable={k: str(v) for k, v in (status.get("allocatable") or {}).items()},
        conditions=conditions,
        taints=[
            Taint(key=t.get("key", ""), value=t.get("value"), effect=t.get("effect", ""))
            for t in spec.get("taints") or []
        ],
        unschedulable=bool(spec.get("unschedulable")),
        ready=ready,
        gpu_product=labels.get(GPU_PRODUCT_LABEL),
        kubelet_version=info.get("kubeletVersion"),
        kernel_version=info.get("kernelVersion"),
        os_image=info.get("osImage"),
        resource_version=meta.get("resourceVersion"),
        dra_drivers=sorted(dra_drivers or []),
        annotations={
            k: str(v)
            for k, v in (meta.get("annotations") or {}).items()
            if k in KEPT_NODE_ANNOTATIONS
        },
    )


def is_gpu_node(node: Obj, dra_drivers: list[str] | None = None) -> bool:
    """The core predicate (``bot.core.model.cluster.is_gpu_node``) over a raw Node."""
    allocatable = (node.get("status") or {}).get("allocatable") or {}
    return core_is_gpu_node({k: str(v) for k, v in allocatable.items()}, dra_drivers or ())


def parse_owner(ref: Obj) -> OwnerRef:
    return OwnerRef(
        kind=ref.get("kind", ""),
        name=ref.get("name", ""),
        api_version=ref.get("apiVersion", ""),
        uid=ref.get("uid", ""),
    )


def _container_id(raw: Any) -> str | None:
    match = _CONTAINER_ID.match(raw or "")
    return match.group(1) if match else None


def _containers(pod: Obj) -> list[ContainerInfo]:
    spec, status = pod.get("spec") or {}, pod.get("status") or {}
    statuses = {
        cs.get("name"): cs
        for key in ("initContainerStatuses", "containerStatuses")
        for cs in status.get(key) or []
    }
    out = []
    for init, key in ((True, "initContainers"), (False, "containers")):
        for c in spec.get(key) or []:
            cs = statuses.get(c.get("name")) or {}
            resources = c.get("resources") or {}
            last = ((cs.get("lastState") or {}).get("terminated") or {}).get("reason")
            out.append(
                ContainerInfo(
                    name=c.get("name", ""),
                    init=init,
                    sidecar=init and c.get("restartPolicy") == "Always",
                    image=c.get("image", ""),
                    requests={k: str(v) for k, v in (resources.get("requests") or {}).items()},
                    limits={k: str(v) for k, v in (resources.get("limits") or {}).items()},
                    container_id=_container_id(cs.get("containerID")),
                    restart_count=int(cs.get("restartCount") or 0),
                    last_termination_reason=last,
                    env={
                        e["name"]: str(e["value"])
                        for e in c.get("env") or []
                        if e.get("name") in USED_ENV_KEYS and "value" in e
                    },
                    memory_resize_policy=next(
                        (
                            r.get("restartPolicy")
                            for r in c.get("resizePolicy") or []
                            if r.get("resourceName") == "memory"
                        ),
                        None,
                    ),
                )
            )
    return out


def _memory_limit_bytes(pod: Obj, limits: Mapping[str, Any]) -> int | None:
    """None when some long-running container has no memory limit (the pod is unbounded)."""
    spec = pod.get("spec") or {}
    if "memory" in ((spec.get("resources") or {}).get("limits") or {}):
        return int(limits["memory"].value())
    running = list(spec.get("containers") or []) + [
        c for c in spec.get("initContainers") or [] if c.get("restartPolicy") == "Always"
    ]
    if not running or "memory" not in limits:
        return None
    for c in running:
        if "memory" not in ((c.get("resources") or {}).get("limits") or {}):
            return None
    return int(limits["memory"].value())


def parse_pod(
    pod: Obj,
    *,
    owners: Sequence[OwnerRef] = (),
    dra_devices: list[ClaimedDevice] | None = None,
) -> PodInfo:
    """``dra_devices``: what its ResourceClaims were allocated (``bot.kube.dra.pod_devices``),
    None when they were not read."""
    meta, spec, status = _meta(pod), pod.get("spec") or {}, pod.get("status") or {}
    requests, limits = pod_requests_and_limits(pod)
    ref = controller_ref(pod)
    volumes = spec.get("volumes") or []
    return PodInfo(
        namespace=meta.get("namespace", ""),
        name=meta.get("name", ""),
        uid=meta.get("uid", ""),
        phase=status.get("phase") or "Pending",
        node_name=spec.get("nodeName"),
        qos_class=_QOS.get(status.get("qosClass") or "", "besteffort"),
        priority=int(spec.get("priority") or 0),
        priority_class_name=spec.get("priorityClassName"),
        labels=dict(meta.get("labels") or {}),
        owners=list(owners),
        containers=_containers(pod),
        memory_request_bytes=requests["memory"].value() if "memory" in requests else 0,
        memory_limit_bytes=_memory_limit_bytes(pod, limits),
        gpu_request=requests[GPU_RESOURCE].value() if GPU_RESOURCE in requests else 0,
        accelerators={
            name: int(q.value())
            for name, q in sorted(requests.items())
            if is_accelerator_resource(name) and q.value() > 0
        },
        resource_claims=[
            str(c.get("name", "")) for c in spec.get("resourceClaims") or [] if isinstance(c, dict)
        ],
        dra_devices=dra_devices,
        is_daemonset=bool(ref and ref.get("kind") == "DaemonSet"),
        is_mirror=MIRROR_ANNOTATION in (meta.get("annotations") or {}),
        has_emptydir=any("emptyDir" in v for v in volumes),
        deleting=bool(meta.get("deletionTimestamp")),
        ready=any(
            c.get("type") == "Ready" and c.get("status") == "True"
            for c in status.get("conditions") or []
            if isinstance(c, dict)
        ),
        created_at=parse_time(meta.get("creationTimestamp")),
        service_account=spec.get("serviceAccountName"),
        annotations={
            k: str(v) for k, v in (meta.get("annotations") or {}).items() if k in KEPT_ANNOTATIONS
        },
        scheduling=parse_scheduling(pod),
    )


def parse_event(event: Obj) -> EventInfo:
    involved = event.get("involvedObject") or event.get("regarding") or {}
    last = (
        event.get("lastTimestamp")
        or (event.get("series") or {}).get("lastObservedTime")
        or event.get("eventTime")
        or event.get("firstTimestamp")
        or _meta(event).get("creationTimestamp")
    )
    return EventInfo(
        namespace=_meta(event).get("namespace", ""),
        involved_kind=involved.get("kind", ""),
        involved_name=involved.get("name", ""),
        reason=event.get("reason") or "",
        message=event.get("message") or event.get("note") or "",
        type=event.get("type") or "Normal",
        count=int(event.get("count") or (event.get("series") or {}).get("count") or 1),
        last_seen=parse_time(last),
    )


def parse_pod_metrics(item: Obj) -> PodMetrics:
    total = sum(
        parse_quantity((c.get("usage") or {}).get("memory", "0")).value()
        for c in item.get("containers") or []
    )
    meta = _meta(item)
    return PodMetrics(
        namespace=meta.get("namespace", ""),
        name=meta.get("name", ""),
        memory_working_set_bytes=total,
    )


def parse_budget(item: Obj) -> BudgetInfo:
    """A PodDisruptionBudget with its status (``policy/v1``). A status not yet written reads
    as no disruption allowed, as the eviction API reads it."""
    meta, spec, status = _meta(item), item.get("spec") or {}, item.get("status") or {}
    generation = meta.get("generation")
    observed = status.get("observedGeneration")
    return BudgetInfo(
        namespace=meta.get("namespace", ""),
        name=meta.get("name", ""),
        selector=parse_selector(spec.get("selector")),
        disruptions_allowed=int(status.get("disruptionsAllowed") or 0),
        current_healthy=int(status.get("currentHealthy") or 0),
        desired_healthy=int(status.get("desiredHealthy") or 0),
        expected_pods=int(status.get("expectedPods") or 0),
        current=not (
            isinstance(generation, int) and (not isinstance(observed, int) or observed < generation)
        ),
        unhealthy_pod_eviction_policy=spec.get("unhealthyPodEvictionPolicy"),
    )


def parse_priority_class(item: Obj) -> PriorityClassInfo:
    return PriorityClassInfo(
        name=_meta(item).get("name", ""),
        value=int(item.get("value") or 0),
        global_default=bool(item.get("globalDefault")),
        preemption_policy=item.get("preemptionPolicy"),
    )
