"""What the remedies need beyond the node's own pods, read for one cluster view:

- the rollout facts of the pods' top built-in controllers (strategy, GitOps owner, VPA,
  Job failure policy), from the controllers the owner-chain walk already read;
- the members of the node's gangs on other nodes (one pod list per gang namespace, and the
  chain of each distinct direct owner: ``bot.kube.members``);
- every node's free room, for where a restarted pod can go: the gateway's shared fleet
  read in slim records (``bot.kube.tallying``), reused while fresh (``fleet_cache_s``), so
  a diagnosis costs what its node costs, not what the cluster costs.
- each Deployment's and StatefulSet's running pods on other nodes (``WorkloadInfo.elsewhere``:
  a template change rolls them too): ONE list per owner, in its namespace, by its own
  ``spec.selector``; a pod counts when its controller is that StatefulSet, or a ReplicaSet of
  that Deployment (named ``<deployment>-<hash>``). DaemonSets are left out (their note counts
  every node from ``desiredNumberScheduled``).

- Karpenter's NodePools (``karpenter.sh``) and Cluster API MachineDeployments/MachineSets
  the cluster autoscaler scales (``cluster.x-k8s.io``), so a pool with no node yet is seen;
- the Kueue Workloads of the node's queued pods (admission, ClusterQueue, PodsReady,
  evictions), one list per namespace;
- the pods the node's pods' required pod (anti-)affinity terms and DoNotSchedule topology
  spread constraints select, anywhere (one list per distinct selector, all namespaces, the
  terms' namespaces filtered in core), every pod
  with a required anti-affinity (from the fleet read), and the namespaces' labels when a
  term has a ``namespaceSelector`` (``ClusterView.peers``, ``namespace_labels``).

The owners' pods, the terms' peers and the gangs' members are read from the pods informer's
memory when the bot keeps one and it is synced (``Gateway.held_pods``, ``bot.kube.selections``;
``Gateway.held_records``, ``bot.kube.members``): no list then, whatever the cluster's size.
Otherwise they are listed as said above, and the answer is cut to the same slim objects, so a
plan is the same whichever served it.

Each part is optional evidence: a read the bot may not make (403) or a group the server
does not serve leaves that part empty, never fails the diagnosis.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar

from bot.core.model.cluster import NodePoolInfo, OwnerRef, PodInfo, RoomOnNode
from bot.core.model.gangs import builtin_kind, gang_of
from bot.core.model.workloads import KueueWorkload, PeerPod, QueueInfo, Requirement, WorkloadInfo
from bot.core.remedies.rollouts import KUEUE_QUEUE_LABEL
from bot.errors import GpunodeError
from bot.kube import members, pools, queues, reading, selections
from bot.kube.doing import Doing
from bot.kube.reading import OwnerCache
from bot.kube.rollouts import parse_workload
from bot.kube.scheduling import affinity_terms, parse_volume_terms, selector_text
from bot.kube.tallying import FleetTally
from bot.kube.transport import Transport

log = logging.getLogger(__name__)
Obj = dict[str, Any]
T = TypeVar("T")


class Reads(Protocol):
    """What the survey needs of the cluster: ``bot.kube.gateway.Gateway`` is one. Said here,
    so this module never imports the gateway that calls it."""

    async def _call(self, what: Doing, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T: ...

    def _member_chains(
        self, t: Transport, pods: list[Obj], cache: dict[tuple[str, str, str], Obj | None]
    ) -> list[list[Any]]: ...

    async def fleet(self, *, max_age_s: float | None = None) -> FleetTally: ...

    async def held_pods(self, namespace: str | None, selector: str) -> list[Obj] | None: ...

    async def held_records(self, namespace: str) -> list[members.Keyed] | None: ...


#: kinds whose rollout facts a remedy reads
WATCHED_KINDS = ("Deployment", "StatefulSet", "DaemonSet", "Job")


@dataclass
class RemedyContext:
    workloads: list[WorkloadInfo] = field(default_factory=list)
    gang_pods: list[PodInfo] = field(default_factory=list)
    room: list[RoomOnNode] | None = None
    queues: list[QueueInfo] = field(default_factory=list)
    #: pod key -> its bound PersistentVolumes' node affinity terms (pods with claims only)
    volume_terms: dict[str, list[list[list[Requirement]]]] = field(default_factory=dict)
    kueue_workloads: list[KueueWorkload] = field(default_factory=list)
    pools: list[NodePoolInfo] | None = None
    peers: list[PeerPod] | None = None
    namespace_labels: dict[str, dict[str, str]] = field(default_factory=dict)


def peer_of(pod: Obj, node: str) -> PeerPod:
    meta = pod.get("metadata") or {}
    return PeerPod(
        key=f"{meta.get('namespace')}/{meta.get('name')}",
        namespace=str(meta.get("namespace") or ""),
        labels={str(k): str(v) for k, v in (meta.get("labels") or {}).items()},
        node=node,
        anti_affinity_terms=affinity_terms(pod, "podAntiAffinity"),
        terminating=bool(meta.get("deletionTimestamp")),
    )


async def _peers(
    gw: Reads, pods: list[PodInfo], fleet: FleetTally | None
) -> tuple[list[PeerPod] | None, dict[str, dict[str, str]]]:
    """The existing pods inter-pod affinity counts for the node's pods (see the module
    docstring); None when the fleet (and so every pod's anti-affinity) or a term's list
    could not be read: placement then falls back to one replica per node."""
    if fleet is None:
        return None, {}
    found: dict[str, PeerPod] = {}
    for where, slim in fleet.anti:
        peer = peer_of(slim, where)
        found[peer.key] = peer
    terms = [
        t
        for p in pods
        if p.scheduling is not None
        for t in (*p.scheduling.affinity_terms, *p.scheduling.anti_affinity_terms)
    ]
    spread = [
        c.selector
        for p in pods
        if p.scheduling is not None
        for c in p.scheduling.spread_constraints
        if c.selector is not None and (c.selector.match_labels or c.selector.match_expressions)
    ]
    selectors = sorted(
        {selector_text(t.selector) for t in terms if t.selector is not None}
        | {selector_text(s) for s in spread}
    )
    for text in selectors:
        chosen = await gw.held_pods(None, text)
        if chosen is None:
            raw = await _optional(
                gw,
                Doing.of("list_pods_selected", selector=repr(text)),
                reading.list_pods_selected,
                text,
            )
            if raw is None:
                return None, {}
            chosen = selections.cut(raw)
        for pod in chosen:
            peer = peer_of(pod, str(pod["spec"]["nodeName"]))
            found[peer.key] = peer  # this pod's own: its deletionTimestamp too
    labels: dict[str, dict[str, str]] = {}
    every = [*terms, *(t for p in found.values() for t in p.anti_affinity_terms)]
    if any(t.namespace_selector is not None for t in every):
        raw = await _optional(gw, Doing.of("list_namespaces"), reading.list_namespaces)
        if raw is None:
            return None, {}
        labels = {
            str((n.get("metadata") or {}).get("name")): {
                str(k): str(v) for k, v in ((n.get("metadata") or {}).get("labels") or {}).items()
            }
            for n in raw
        }
    return sorted(found.values(), key=lambda p: p.key), labels


async def _volume_terms(gw: Reads, pods: list[PodInfo]) -> dict[str, list[list[list[Requirement]]]]:
    """Where each pod's PersistentVolumes let it run: PVC -> bound PV -> ``spec.nodeAffinity``
    (a local PV names its node). A claim not bound yet, or not readable, constrains nothing
    here (WaitForFirstConsumer binds at scheduling)."""
    out: dict[str, list[list[list[Requirement]]]] = {}
    seen: dict[str, list[list[Requirement]]] = {}
    for pod in pods:
        claims = pod.scheduling.claims if pod.scheduling is not None else []
        terms = []
        for claim in claims:
            pvc = await _optional(
                gw,
                Doing.of("read_pvc", namespace=pod.namespace, name=claim),
                reading.read_pvc,
                pod.namespace,
                claim,
            )
            volume = ((pvc or {}).get("spec") or {}).get("volumeName")
            if not volume:
                continue
            if volume not in seen:
                pv = await _optional(gw, Doing.of("read_pv", name=volume), reading.read_pv, volume)
                seen[volume] = parse_volume_terms(pv) if pv else []
            if seen[volume]:
                terms.append(seen[volume])
        if terms:
            out[pod.key] = terms
    return out


async def _queues(gw: Reads, pods: list[PodInfo], groups: dict[str, str]) -> list[QueueInfo]:
    """The Kueue LocalQueues the node's pods name (label ``kueue.x-k8s.io/queue-name``) and
    their ClusterQueues; none when Kueue is not served. A queue that cannot be read is left
    out (the plans then say only that restarts re-enter admission)."""
    version = groups.get(queues.GROUP)
    names = sorted(
        {(p.namespace, p.labels[KUEUE_QUEUE_LABEL]) for p in pods if KUEUE_QUEUE_LABEL in p.labels}
    )
    if version is None or not names:
        return []
    out = []
    for ns, name in names:
        local = await _optional(
            gw,
            Doing.of("read_local_queue", namespace=ns, name=name),
            queues.read_local_queue,
            version,
            ns,
            name,
        )
        if local is None:
            continue
        cq = (local.get("spec") or {}).get("clusterQueue")
        cluster = None
        if cq:
            cluster = await _optional(
                gw,
                Doing.of("read_cluster_queue", name=cq),
                queues.read_cluster_queue,
                version,
                cq,
            )
        out.append(queues.parse_queue(local, cluster))
    return out


async def _kueue_workloads(
    gw: Reads, pods: list[PodInfo], groups: dict[str, str]
) -> list[KueueWorkload]:
    """The Kueue Workloads of the node's queued pods (label ``kueue.x-k8s.io/queue-name``):
    one list per namespace, each Workload matched to the pods whose owner chain (or the pod
    itself) it is owner-referenced to. None read when Kueue is not served or the list is
    refused (the plans then say only that restarts re-enter admission)."""
    version = groups.get(queues.GROUP)
    queued = [p for p in pods if KUEUE_QUEUE_LABEL in p.labels]
    if version is None or not queued:
        return []
    out = []
    for ns in sorted({p.namespace for p in queued}):
        raw = await _optional(
            gw,
            Doing.of("list_kueue_workloads", namespace=ns),
            queues.list_workloads,
            version,
            ns,
        )
        for obj in raw or []:
            covered = sorted(
                p.key
                for p in queued
                if p.namespace == ns
                and any(
                    queues.owns(obj, o.kind, o.name, o.uid)
                    for o in [*p.owners, OwnerRef(kind="Pod", name=p.name, uid=p.uid)]
                )
            )
            if covered:
                out.append(queues.parse_workload(obj, covered))
    return out


async def _pools(gw: Reads, groups: dict[str, str]) -> list[NodePoolInfo] | None:
    """Karpenter's NodePools and the cluster autoscaler's Cluster API node groups (None when
    neither is served or readable: placement then knows pools only through their nodes'
    labels)."""
    found: list[NodePoolInfo] | None = None
    version = groups.get(pools.GROUP)
    if version is not None:
        raw = await _optional(gw, Doing.of("list_nodepools"), pools.list_nodepools, version)
        if raw is not None:
            found = [pools.parse_nodepool(o) for o in raw]
    version = groups.get(pools.CAPI_GROUP)
    if version is not None:
        deployments = await _optional(
            gw,
            Doing.of("list_machine_deployments"),
            pools.list_capi,
            version,
            "machinedeployments",
        )
        sets = await _optional(
            gw, Doing.of("list_machine_sets"), pools.list_capi, version, "machinesets"
        )
        if deployments is not None and sets is not None:
            found = [*(found or []), *pools.node_groups(deployments, sets)]
    return found


async def _optional(gw: Reads, what: Doing, fn: Any, *args: Any, **kw: Any) -> Any:
    try:
        return await gw._call(what, fn, *args, **kw)
    except GpunodeError as exc:
        log.warning("%s failed; the plans say less: %s", what, exc)
        return None


async def _workloads(
    gw: Reads,
    pods: list[PodInfo],
    cache: dict[tuple[str, str, str], Obj | None],
    groups: dict[str, str],
) -> list[WorkloadInfo]:
    tops: dict[tuple[str, str, str], Obj] = {}
    for pod in pods:
        owner = pod.top_owner
        kind = builtin_kind(owner)
        if owner is None or kind not in WATCHED_KINDS:
            continue
        obj = cache.get((kind, pod.namespace, owner.name))
        if obj is not None:
            tops[(kind, pod.namespace, owner.name)] = obj
    vpas: dict[str, list[Obj]] = {}
    version = groups.get(reading.VPA_GROUP)
    if version:
        for ns in sorted({k[1] for k in tops}):
            found = await _optional(
                gw, Doing.of("list_vpas", namespace=ns), reading.list_vpas, version, ns
            )
            vpas[ns] = found or []
    return [parse_workload(obj, vpas.get(key[1], [])) for key, obj in sorted(tops.items())]


def _listed(t: Transport, namespace: str) -> list[members.Keyed]:
    """The namespace's pods, listed and cut to records on the gateway's thread."""
    return members.records(reading.list_namespaced_pods(t, namespace))


def _members_in(
    t: Transport,
    chains_of: Callable[..., list[list[OwnerRef]]],
    namespace: str,
    held: list[members.Keyed],
    node: str,
    gangs: list[str],
    cache: dict[tuple[str, str, str], Obj | None],
) -> list[PodInfo]:
    """``members.members`` of one namespace, with each distinct direct owner's chain read
    by ``chains_of``: on one of the gateway's threads (a namespace may hold thousands of
    pods, and each member is a model built)."""
    owned = members.owners(held, node)
    chains = chains_of(t, [members.owner_pod(namespace, o) for o in owned], cache)
    return members.members(held, node, gangs, dict(zip(owned, chains, strict=True)))


async def _gang_pods(
    gw: Reads, node: str, pods: list[PodInfo], cache: dict[tuple[str, str, str], Obj | None]
) -> list[PodInfo]:
    """The members of the node's gangs on other nodes (``bot.kube.members``): a gang
    namespace's pods from the informer's memory when it is synced, else one list of the
    namespace; then each distinct direct owner's chain (a GET per built-in controller not
    read lately, ``Gateway._member_chains``; none for a gang owner)."""
    gangs = {g.key: g for p in pods if (g := gang_of(p)) is not None}
    if not gangs:
        return []
    out: list[PodInfo] = []
    for ns in sorted({g.namespace for g in gangs.values()}):
        held = await gw.held_records(ns)
        if held is None:
            held = await _optional(gw, Doing.of("list_pods_in", namespace=ns), _listed, ns) or []
        out.extend(
            await gw._call(
                Doing.of("read_pod_owners"),
                _members_in,
                gw._member_chains,
                ns,
                held,
                node,
                sorted(gangs),
                cache,
            )
        )
    return sorted(out, key=lambda p: p.key)


async def survey(
    gw: Reads,
    node: str,
    pods: list[PodInfo],
    cache: OwnerCache,
    groups: dict[str, str],
) -> RemedyContext:
    (workloads, gang_pods, fleet, queued, volumes, admitted), nodepools = await asyncio.gather(
        asyncio.gather(
            _workloads(gw, pods, cache, groups),
            _gang_pods(gw, node, pods, cache),
            _fleet(gw),
            _queues(gw, pods, groups),
            _volume_terms(gw, pods),
            _kueue_workloads(gw, pods, groups),
        ),
        _pools(gw, groups),
    )
    room = None if fleet is None else fleet.room()
    workloads = await _with_elsewhere(gw, workloads, node, cache)
    peers, namespace_labels = await _peers(gw, pods, fleet)
    return RemedyContext(
        workloads=workloads,
        gang_pods=gang_pods,
        room=room,
        queues=queued,
        volume_terms=volumes,
        peers=peers,
        namespace_labels=namespace_labels,
        kueue_workloads=admitted,
        pools=nodepools,
    )


def _selector(spec: Obj) -> str | None:
    """A workload's ``spec.selector`` as a label selector string (None: selects nothing)."""
    sel = spec.get("selector") or {}
    parts = [f"{k}={v}" for k, v in sorted((sel.get("matchLabels") or {}).items())]
    for e in sel.get("matchExpressions") or []:
        key, op, values = e.get("key", ""), e.get("operator", ""), e.get("values") or []
        if op == "In":
            parts.append(f"{key} in ({','.join(values)})")
        elif op == "NotIn":
            parts.append(f"{key} notin ({','.join(values)})")
        elif op == "Exists":
            parts.append(key)
        elif op == "DoesNotExist":
            parts.append(f"!{key}")
    return ",".join(parts) or None


def _owned_by(obj: Obj, kind: str, name: str) -> bool:
    for ref in (obj.get("metadata") or {}).get("ownerReferences") or []:
        if not ref.get("controller"):
            continue
        if kind == "StatefulSet":
            return bool(ref.get("kind") == "StatefulSet" and ref.get("name") == name)
        return bool(
            ref.get("kind") == "ReplicaSet" and str(ref.get("name", "")).startswith(f"{name}-")
        )
    return False


async def _with_elsewhere(
    gw: Reads,
    workloads: list[WorkloadInfo],
    node: str,
    cache: OwnerCache,
) -> list[WorkloadInfo]:
    """``workloads`` with each Deployment's and StatefulSet's pods on other nodes (an
    owner's list is shared with the other diagnoses through ``cache``, as its controller is)."""

    async def elsewhere(w: WorkloadInfo) -> dict[str, str]:
        obj = cache.get((w.kind, w.namespace, w.name))
        selector = _selector((obj or {}).get("spec") or {})
        if w.kind not in ("Deployment", "StatefulSet") or selector is None:
            return {}
        held = await gw.held_pods(w.namespace, selector)
        if held is None:
            held = cache.pods.get((w.namespace, selector))
        if held is None:
            raw = await _optional(
                gw,
                Doing.of("list_pods_of", namespace=w.namespace, name=w.name),
                reading.list_namespaced_pods,
                w.namespace,
                label_selector=selector,
            )
            if raw is not None:
                held = cache.pods[(w.namespace, selector)] = selections.cut(raw)
        found: dict[str, str] = {}
        for p in held or []:  # bound, not Succeeded or Failed (``selections``)
            meta, where = p["metadata"], p["spec"]["nodeName"]
            if where == node:
                continue
            if meta.get("deletionTimestamp") or not _owned_by(p, w.kind, w.name):
                continue
            found[f"{w.namespace}/{meta.get('name', '')}"] = str(where)
        return dict(sorted(found.items()))

    spread = await asyncio.gather(*(elsewhere(w) for w in workloads))
    return [
        w.model_copy(update={"elsewhere": there}) if there else w
        for w, there in zip(workloads, spread, strict=True)
    ]


async def _fleet(gw: Reads) -> FleetTally | None:
    """The shared fleet read (``Gateway.fleet``): no call when one is fresh."""
    try:
        return await gw.fleet()
    except GpunodeError as exc:
        log.warning("reading the fleet failed; the plans say less: %s", exc)
        return None
