"""Sync reads (run in threads by the gateway): node, pods on a node, owner chains, events,
metrics when served, priority classes, discovery. Return API JSON; client errors propagate
for the gateway to translate."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable
from typing import Any

from bot.core.model.cluster import OwnerRef
from bot.core.model.gangs import builtin_kind
from bot.errors import ForbiddenError, NotFoundError
from bot.kube.doing import Doing
from bot.kube.errors import translating
from bot.kube.objects import controller_ref, parse_owner
from bot.kube.ownerrecords import INFORMED_CONTROLLERS
from bot.kube.pages import METRICS_GROUP as METRICS_GROUP  # where the gateway reads it
from bot.kube.transport import Transport

Obj = dict[str, Any]

#: kind -> (API path prefix, plural) for controllers the gateway reads and patches: those the
#: owner informers keep, and the legacy ReplicationController
CONTROLLERS: dict[str, tuple[str, str]] = {
    **INFORMED_CONTROLLERS,
    "ReplicationController": ("/api/v1", "replicationcontrollers"),
}
#: how deep an ownerReference chain may go (Pod -> RS -> Deployment is 2; guards loops)
MAX_OWNER_DEPTH = 5
#: events kept per view, newest first
MAX_EVENTS = 200
VPA_GROUP = "autoscaling.k8s.io"


def controller_path(kind: str, namespace: str, name: str) -> str:
    try:
        prefix, plural = CONTROLLERS[kind]
    except KeyError:
        known = ", ".join(sorted(CONTROLLERS))
        raise ValueError(f"unsupported controller kind {kind!r}; use one of {known}") from None
    return f"{prefix}/namespaces/{namespace}/{plural}/{name}"


def read_node(t: Transport, name: str) -> Obj:
    return t.get(f"/api/v1/nodes/{name}")  # type: ignore[no-any-return]


def list_nodes(t: Transport) -> list[Obj]:
    return t.list_all("/api/v1/nodes")


def list_pods_on_node(t: Transport, node: str, *, non_terminated: bool) -> list[Obj]:
    """kubectl's selector (``spec.nodeName=...,status.phase!=Succeeded,...``) or all phases."""
    selector = f"spec.nodeName={node}"
    if non_terminated:
        selector += ",status.phase!=Succeeded,status.phase!=Failed"
    return t.list_all("/api/v1/pods", field_selector=selector)


def list_all_pods(t: Transport) -> list[Obj]:
    return t.list_all("/api/v1/pods")


class OwnerCache(dict[tuple[str, str, str], "Obj | None"]):
    """Controllers by (kind, namespace, name) as the owner-chain walk read them (None: not
    found or not readable), and ``pods``: each owner's pods by (namespace, label selector)."""

    def __init__(self) -> None:
        super().__init__()
        #: the running pods, cut by ``bot.kube.selections.cut``
        self.pods: dict[tuple[str, str], list[Obj]] = {}
        #: namespace -> its PodDisruptionBudgets (``list_budgets``)
        self.budgets: dict[str, list[Obj]] = {}


#: (kind, namespace, name) -> the controller as an owner informer holds it, or None when it
#: cannot say (``Gateway._held_owner``): the walk then reads the API
OwnerLookup = Callable[[str, str, str], "Obj | None"]


def owner_chain(
    t: Transport,
    pod: Obj,
    cache: dict[tuple[str, str, str], Obj | None],
    held: OwnerLookup | None = None,
) -> list[OwnerRef]:
    """Controller refs from the pod up to the top controller (nearest first).

    Each controller is taken from ``cache``, else from ``held`` (an owner informer's memory,
    ``bot.kube.ownerrecords``), else read (one GET); what it finds lands in ``cache``.
    An owner that is not a built-in controller *of its built-in API group*, or one the
    gateway may not read (404/403), ends the chain at that owner: it is still reported, only
    its own owners stay unknown.
    """
    namespace = (pod.get("metadata") or {}).get("namespace", "")
    chain: list[OwnerRef] = []
    obj: Obj | None = pod
    while obj is not None and len(chain) < MAX_OWNER_DEPTH:
        ref = controller_ref(obj)
        if ref is None:
            break
        owner = parse_owner(ref)
        chain.append(owner)
        # looked up by API group, not kind alone: a Volcano ``Job`` (batch.volcano.sh) is not
        # a batch/v1 Job, and a gang owner (PyTorchJob, JobSet...) ends the chain here
        if builtin_kind(owner) is None:
            break
        key = (owner.kind, namespace, owner.name)
        if key not in cache and held is not None:
            found = held(owner.kind, namespace, owner.name)
            if found is not None:
                cache[key] = found
        if key not in cache:
            try:
                with translating(
                    Doing.of("read_object", kind=owner.kind, namespace=namespace, name=owner.name)
                ):
                    cache[key] = t.get(controller_path(owner.kind, namespace, owner.name))
            except (NotFoundError, ForbiddenError):
                cache[key] = None
        obj = cache[key]
    return chain


class ControllerRefs:
    """Each built-in controller's own controller reference, as owner-chain walks read it, kept
    for ``ttl_s`` across owner caches (which last ``fleet_cache_s`` and end at any write).

    Who controls a ReplicaSet or a Job is set when it is made and changes only when it is
    orphaned or adopted, while the gangs' members on other nodes walk the chain of every
    distinct owner in their namespaces (``bot.kube.members``): kept, a plan reads only the
    owners it has not met lately, not all of a namespace's again after each write. Only found
    controllers are kept (not found or refused is asked again with the next owner cache).
    Thread-safe: the walks run on the gateway's threads."""

    def __init__(self, ttl_s: float) -> None:
        self.ttl_s = ttl_s
        self._held: dict[tuple[str, str, str], tuple[float, Obj]] = {}
        self._lock = threading.Lock()

    def chains(
        self,
        t: Transport,
        pods: list[Obj],
        cache: dict[tuple[str, str, str], Obj | None],
        held: OwnerLookup | None = None,
    ) -> list[list[OwnerRef]]:
        """``owner_chain`` of each pod, through what is kept here and in ``cache`` (and
        ``held``, the owner informers); what it reads lands in both."""
        now = time.monotonic()
        with self._lock:
            for key in [k for k, (at, _) in self._held.items() if now - at >= self.ttl_s]:
                del self._held[key]
            walk: dict[tuple[str, str, str], Obj | None] = {
                k: obj for k, (_, obj) in self._held.items()
            }
        walk.update(cache)  # what this owner cache read wins: it is as new or newer
        known = set(walk)
        chains = [owner_chain(t, p, walk, held) for p in pods]
        read = {k: walk[k] for k in walk.keys() - known}
        cache.update(read)
        with self._lock:
            for key, obj in read.items():
                if obj is not None:
                    ref = controller_ref(obj)
                    self._held[key] = (now, {"metadata": {"ownerReferences": [ref] if ref else []}})
        return chains


def list_events(
    t: Transport,
    node: str,
    pods: Iterable[Obj],
    held: Callable[[Iterable[str]], list[Obj]] | None = None,
) -> list[Obj]:
    """Events about the node and about the given pods (newest first, at most MAX_EVENTS).

    Node events: field selector on the involved object. Pod events: ``held(namespaces)``
    when given (the pod events an informer keeps, of those namespaces only,
    ``bot.kube.informing``), else one list per namespace that has pods on the node; filtered
    to those pods here (kept even if the server ignores the selector).
    """
    node_events = [
        e
        for e in t.list_all(
            "/api/v1/events",
            field_selector=f"involvedObject.kind=Node,involvedObject.name={node}",
        )
        if (e.get("involvedObject") or {}).get("kind") == "Node"
        and (e.get("involvedObject") or {}).get("name") == node
    ]
    wanted: dict[str, set[str]] = {}
    for pod in pods:
        meta = pod.get("metadata") or {}
        wanted.setdefault(meta.get("namespace", ""), set()).add(meta.get("name", ""))
    pod_events = []
    listed = (
        (e for e in held(sorted(wanted)))
        if held is not None
        else (
            e
            for namespace in sorted(wanted)
            for e in t.list_all(
                f"/api/v1/namespaces/{namespace}/events", field_selector="involvedObject.kind=Pod"
            )
        )
    )
    for e in listed:
        involved = e.get("involvedObject") or {}
        namespace = (e.get("metadata") or {}).get("namespace", "")
        if involved.get("kind") == "Pod" and involved.get("name") in wanted.get(namespace, ()):
            pod_events.append(e)
    events = node_events + pod_events
    events.sort(key=_event_time, reverse=True)
    return events[:MAX_EVENTS]


def _event_time(e: Obj) -> str:
    return str(
        e.get("lastTimestamp")
        or e.get("eventTime")
        or e.get("firstTimestamp")
        or (e.get("metadata") or {}).get("creationTimestamp")
        or ""
    )


def served_groups(t: Transport) -> dict[str, str]:
    """API group -> preferred version, from ``/apis`` discovery."""
    groups = t.get("/apis").get("groups") or []
    return {g.get("name", ""): (g.get("preferredVersion") or {}).get("version", "") for g in groups}


def list_pod_metrics(t: Transport, version: str, namespaces: Iterable[str]) -> list[Obj]:
    """Pod metrics of the given namespaces only (one list each): a diagnosis reads what its
    node's pods' namespaces hold, never the whole cluster's."""
    return [
        item
        for ns in namespaces
        for item in t.list_all(f"/apis/{METRICS_GROUP}/{version}/namespaces/{ns}/pods")
    ]


def list_priority_classes(t: Transport) -> list[Obj]:
    return t.list_all("/apis/scheduling.k8s.io/v1/priorityclasses")


def list_budgets(t: Transport, namespaces: Iterable[str], cache: dict[str, list[Obj]]) -> list[Obj]:
    """The PodDisruptionBudgets of ``namespaces``, with the status the disruption controller
    wrote: one scoped list per namespace not in ``cache`` (namespace -> its budgets, shared
    like the owners for ``fleet_cache_s`` and dropped by this gateway's writes)."""
    out: list[Obj] = []
    for ns in sorted(set(namespaces)):
        if ns not in cache:
            cache[ns] = t.list_all(f"/apis/policy/v1/namespaces/{ns}/poddisruptionbudgets")
        out += cache[ns]
    return out


def server_version(t: Transport) -> str | None:
    version = t.get("/version")
    return version.get("gitVersion") if isinstance(version, dict) else None


def core_resources(t: Transport) -> set[str]:
    """Names in ``/api/v1`` discovery (``pods/resize``, ``pods/eviction``, ...)."""
    return {r.get("name", "") for r in t.get("/api/v1").get("resources") or []}


def list_namespaced_pods(
    t: Transport, namespace: str, *, label_selector: str | None = None
) -> list[Obj]:
    return t.list_all(f"/api/v1/namespaces/{namespace}/pods", label_selector=label_selector)


def list_pods_selected(t: Transport, label_selector: str) -> list[Obj]:
    """Pods of every namespace that ``label_selector`` selects (a pod (anti-)affinity term's
    peers; the term's namespaces are filtered by the caller)."""
    return t.list_all("/api/v1/pods", label_selector=label_selector or None)


def list_namespaces(t: Transport) -> list[Obj]:
    """Every namespace (their labels, for a term's ``namespaceSelector``)."""
    return t.list_all("/api/v1/namespaces")


def read_pvc(t: Transport, namespace: str, name: str) -> Obj:
    path = f"/api/v1/namespaces/{namespace}/persistentvolumeclaims/{name}"
    return t.get(path)  # type: ignore[no-any-return]


def read_pv(t: Transport, name: str) -> Obj:
    return t.get(f"/api/v1/persistentvolumes/{name}")  # type: ignore[no-any-return]


def list_vpas(t: Transport, version: str, namespace: str) -> list[Obj]:
    """VerticalPodAutoscalers of ``namespace`` (only called when autoscaling.k8s.io is served)."""
    return t.list_all(f"/apis/{VPA_GROUP}/{version}/namespaces/{namespace}/verticalpodautoscalers")
