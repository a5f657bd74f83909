"""Template patches check the rollout they rely on. Pure: no I/O.

A tier 2 or tier 3 change to a controller's pod template only reaches the pods through the
controller's rollout, so the plan reads it (``WorkloadInfo``, ``bot.core.model.workloads``):

- ``OnDelete`` (StatefulSet/DaemonSet ``updateStrategy``): nothing restarts; the change
  reaches a pod only when someone deletes it (note ``on_delete_nothing_restarts``).
- DaemonSet ``RollingUpdate``: the template change rolls its pod on *every* node it runs on,
  not only this one (``daemonset_rolls_every_node``: how many, from the DaemonSet's
  ``desiredNumberScheduled``, and how many at a time, ``maxUnavailable``, default 1).
- Deployment ``Recreate``: every pod stops before any new one starts (``recreate_stops_all``).
- Deployment ``RollingUpdate`` with a surge (``maxSurge`` > 0, default 25% rounded up): the
  new pod is created *before* an old one leaves; when it fits on no node it stays Pending, and
  with ``maxUnavailable`` 0 the rollout stalls with the old pods running
  (``surge_does_not_fit``).
- GitOps owners revert a live edit: Argo CD (``argocd.argoproj.io/instance`` label,
  ``argocd.argoproj.io/tracking-id`` annotation) and Flux (``kustomize.toolkit.fluxcd.io/name``,
  ``helm.toolkit.fluxcd.io/name`` labels) sync the object back from Git (``gitops_reverts``).
- A VerticalPodAutoscaler (``autoscaling.k8s.io``) in a mode other than ``Off`` sets the
  pods' requests itself (``vpa_reverts``, tier 3 only: it does not touch priority).
- A StatefulSet ``RollingUpdate`` with a ``partition``: only pods with an ordinal at or
  above it get the new template; the others keep running unchanged (``partition_holds``,
  naming them). They are not restarted, so they are neither in ``restarts`` nor counted in
  a plan's relief (``held_by_partition``).
- Kueue (pods labelled ``kueue.x-k8s.io/queue-name``): a restarted pod is a new workload to
  Kueue and goes back through admission in its LocalQueue, waiting for quota (and, with
  ``waitForPodsReady``, under its timeout) before it runs (``kueue_readmission``). When its
  ClusterQueue has no quota left for a resource (``QueueInfo.exhausted``, from the queues'
  status), the restarted pods could not be admitted: note ``kueue_no_quota``, and tiers 2
  and 3 refuse (warning ``kueue_queue_full``). Each Kueue ``Workload`` of the restarted
  pods (``ClusterView.kueue_workloads``) is named with its state (``kueue_workload``):
  admitted to which ClusterQueue, or not; its PodsReady condition; an eviction (e.g.
  ``PodsReadyTimeout``) and how often it was requeued. With ``waitForPodsReady``, Kueue
  evicts a workload whose pods are not all Ready within the timeout (5 minutes by default)
  and requeues it with a backoff, deactivating it after ``backoffLimitCount`` requeues.
- A Helm release (``app.kubernetes.io/managed-by: Helm``, ``meta.helm.sh/release-name``)
  renders the object from its chart and values: the next ``helm upgrade`` puts the old
  value back (``helm_reverts``, naming the release, the rendered field and the values key
  as far as it is known: see ``helm_note``).

Tier 2 also says where the restarted pods go (``restart_notes``): a cordoned node cannot take
them back; another node that fits is named; when none fits, the pods a higher priority would
preempt are named, and ``preemptionPolicy: Never`` (gpunode's default) preempts none of them.
"""

from __future__ import annotations

import math

from bot.core.model.actions import PlanNote
from bot.core.model.cluster import ClusterView, PodInfo, RoomOnNode
from bot.core.model.workloads import WorkloadInfo
from bot.core.remedies.destinations import affinity_filter, place, remaining_peers, sibling_nodes
from bot.core.remedies.placement import fits, victims

MAX_NAMES = 6
KUEUE_QUEUE_LABEL = "kueue.x-k8s.io/queue-name"


def _names(items: list[str]) -> str:
    shown = items[:MAX_NAMES]
    return ", ".join(shown) + (
        f" and {len(items) - len(shown)} more" if len(items) > MAX_NAMES else ""
    )


def scaled(value: str | None, replicas: int, *, round_up: bool, default: str) -> int:
    """An int-or-percent rollout bound as the controller resolves it (surge rounds up,
    unavailable rounds down)."""
    text = str(value if value is not None else default)
    if text.endswith("%"):
        raw = int(text[:-1]) * replicas / 100
        return math.ceil(raw) if round_up else math.floor(raw)
    return int(text)


def workload_of(view: ClusterView, kind: str, namespace: str, name: str) -> WorkloadInfo | None:
    return next(
        (w for w in view.workloads if (w.kind, w.namespace, w.name) == (kind, namespace, name)),
        None,
    )


#: a room's free DRA devices of one driver, and a pod's need of them, count under this key
DRA_PREFIX = "dra:"


def dra_needs(pod: PodInfo) -> dict[str, int]:
    """The GPU devices a pod's DRA claims hold, per driver, as room keys."""
    out: dict[str, int] = {}
    for d in pod.gpu_devices:
        out[DRA_PREFIX + d.driver] = out.get(DRA_PREFIX + d.driver, 0) + 1
    return out


def partition_held_keys(
    view: ClusterView, kind: str, namespace: str, name: str, keys: list[str]
) -> set[str]:
    """The pod keys (``ns/<statefulset>-<ordinal>``) a template change does not reach: a
    StatefulSet's rolling update with a partition updates only ordinals >= partition (none
    is held under OnDelete, which ``on_delete_nothing_restarts`` covers)."""
    w = workload_of(view, kind, namespace, name)
    if kind != "StatefulSet" or w is None or not w.partition or w.strategy == "OnDelete":
        return set()
    held = set()
    for key in keys:
        pod_name = key.split("/", 1)[-1]
        tail = pod_name[len(name) + 1 :] if pod_name.startswith(f"{name}-") else ""
        if tail.isdigit() and int(tail) < w.partition:
            held.add(key)
    return held


def held_by_partition(
    view: ClusterView, kind: str, namespace: str, name: str, pods: list[PodInfo]
) -> list[PodInfo]:
    """``partition_held_keys`` over pods."""
    held = partition_held_keys(view, kind, namespace, name, [p.key for p in pods])
    return [p for p in pods if p.key in held]


def _room_after(room: RoomOnNode, leaving: list[PodInfo]) -> RoomOnNode:
    free = dict(room.free)
    keys = {p.key for p in leaving}
    for p in leaving:
        if p.scheduling is not None:
            for k, v in p.scheduling.requests.items():
                free[k] = free.get(k, 0) + v
    return room.model_copy(
        update={"free": free, "pods": [s for s in room.pods if s.key not in keys]}
    )


def rollout_notes(
    view: ClusterView,
    kind: str,
    namespace: str,
    name: str,
    *,
    pods: list[PodInfo],
    resources: bool,
    container: str | None = None,
) -> list[PlanNote]:
    """What the controller's rollout does with a template change (see module docstring).
    ``container``: the container a resources change caps (names the field for Helm)."""
    w = workload_of(view, kind, namespace, name)
    if w is None:
        return []
    notes: list[PlanNote] = []
    ref = {"workload": w.key}
    held = sorted(p.key for p in held_by_partition(view, kind, namespace, name, pods))
    if held:
        notes.append(
            PlanNote(
                code="partition_holds",
                params=ref | {"partition": w.partition, "count": len(held), "pods": _names(held)},
            )
        )
    if w.strategy == "OnDelete":
        notes.append(PlanNote(code="on_delete_nothing_restarts", params=ref))
    elif kind == "DaemonSet":
        notes.append(
            PlanNote(
                code="daemonset_rolls_every_node",
                params=ref
                | {"count": w.replicas, "unavailable": w.max_unavailable or "1", "here": len(pods)},
            )
        )
    elif kind == "Deployment" and w.strategy == "Recreate":
        notes.append(PlanNote(code="recreate_stops_all", params=ref | {"count": len(pods)}))
    elif kind == "Deployment":
        replicas = w.replicas if w.replicas is not None else len(pods)
        surge = scaled(w.max_surge, replicas, round_up=True, default="25%")
        unavailable = scaled(w.max_unavailable, replicas, round_up=False, default="25%")
        if surge > 0 and view.room is not None:
            sample = next((p for p in pods if p.scheduling is not None), None)
            if sample is not None and sample.scheduling is not None:
                sched = sample.scheduling
                if not any(fits(sched, r) for r in view.room):
                    notes.append(
                        PlanNote(
                            code="surge_does_not_fit",
                            params=ref
                            | {"surge": surge, "unavailable": unavailable, "pod": sample.name},
                        )
                    )
    if w.gitops:
        notes.append(
            PlanNote(code="gitops_reverts", params=ref | {"tool": w.gitops, "app": w.gitops_name})
        )
    queued = sorted(
        {
            p.labels[KUEUE_QUEUE_LABEL]
            for p in pods
            if KUEUE_QUEUE_LABEL in p.labels and p.key not in held
        }
    )
    if queued:
        count = sum(1 for p in pods if KUEUE_QUEUE_LABEL in p.labels and p.key not in held)
        notes.append(
            PlanNote(
                code="kueue_readmission",
                params=ref | {"queue": ", ".join(queued), "count": count},
            )
        )
        for q in view.queues:
            if q.namespace == namespace and q.name in queued and q.exhausted:
                notes.append(
                    PlanNote(
                        code="kueue_no_quota",
                        params=ref
                        | {
                            "queue": q.key,
                            "cluster_queue": q.cluster_queue,
                            "resources": ", ".join(q.exhausted),
                            "pending": q.pending_workloads,
                        },
                    )
                )
    restarted = {p.key for p in pods if p.key not in held}
    for kw in view.kueue_workloads:
        covered = [k for k in kw.pods if k in restarted]
        if not covered or kw.namespace != namespace:
            continue
        notes.append(
            PlanNote(
                code="kueue_workload",
                params=ref
                | {
                    "kueue_workload": kw.key,
                    "count": len(covered),
                    "cluster_queue": kw.cluster_queue if kw.admitted else None,
                    "pods_ready": None if kw.pods_ready is None else str(kw.pods_ready).lower(),
                    "evicted": kw.evicted_reason,
                    "requeued": kw.requeue_count or None,
                },
            )
        )
    if w.helm_release:
        notes.append(helm_note(w, container if resources else None))
    if resources and w.vpa and (w.vpa_mode or "Auto") != "Off":
        notes.append(
            PlanNote(code="vpa_reverts", params=ref | {"vpa": w.vpa, "mode": w.vpa_mode or "Auto"})
        )
    return notes


#: the key ``helm create``'s scaffold renders its one container's resources from
HELM_CREATE_MEMORY_KEY = "resources.limits.memory"


def helm_values_key(
    w: WorkloadInfo, field: str, container: str | None
) -> tuple[str, str, str] | None:
    """(key, source, where) of the values key a team named for ``field`` (of ``container``):
    a key for that container first, then one for any container (``{container}`` filled in);
    None when nobody named one."""
    named = [k for k in w.helm_keys if k.field == field]
    for k in sorted(named, key=lambda k: k.container is None):
        if k.container is None or k.container == container:
            return k.key.replace("{container}", container or ""), k.source, k.where
    return None


def helm_note(w: WorkloadInfo, container: str | None) -> PlanNote:
    """``helm_reverts`` for a change to ``container``'s memory limit (None: the pods'
    priorityClassName). The values key is named only as far as it is known: from the
    workload's annotation or the bot's settings (``key_source``), else, for the memory limit
    of a workload with one container, the ``helm create`` scaffold's key marked as a guess
    (``key_source`` "convention"), with the ``helm get values`` command that confirms it."""
    field = (
        f"spec.template.spec.containers[name={container}].resources.limits.memory"
        if container
        else "spec.template.spec.priorityClassName"
    )
    named = helm_values_key(w, "memory-limit" if container else "priority-class", container)
    key: str | None = None
    source: str | None = None
    where: str | None = None
    command = None
    if w.helm_release and "/" in w.helm_release:
        ns, release = w.helm_release.split("/", 1)
        command = f"helm get values {release} -n {ns} -a"
    if named is not None:
        key, source, where = named
    elif container and w.containers == [container] and command is not None:
        key, source = HELM_CREATE_MEMORY_KEY, "convention"  # a guess, said as one
    return PlanNote(
        code="helm_reverts",
        params={
            "workload": w.key,
            "release": w.helm_release,
            "chart": w.helm_chart,
            "field": field,
            "values_key": key,
            "key_source": source,
            "key_where": where,
            "command": command,
        },
    )


def restart_notes(
    view: ClusterView, restarted: list[PodInfo], *, priority: int
) -> tuple[list[PlanNote], bool]:
    """Where each restarted GPU pod goes; True when one of them can go nowhere while the
    node is cordoned (tier 2 then refuses: restarting it would stop the training).

    A GPU pod is any ``accelerated`` pod (MIG slices, shared GPUs, AMD, DRA claims), and a
    node takes it only when it has free every resource name the pod requests: a pod holding
    ``nvidia.com/mig-3g.40gb`` needs that exact profile elsewhere, not any GPU. A pod whose
    GPUs come only through DRA claims needs as many free devices of each driver elsewhere
    (``dra:DRIVER`` in a room's free, which the gateway counts from ResourceSlices less
    allocated claims); with its devices unknown, no node is named and a cordoned node strands
    it: conservative, never a node named that may lack the device."""
    if view.room is None:
        return [], False
    notes: list[PlanNote] = []
    stranded = False
    rooms = [_room_after(r, restarted) if r.name == view.node.name else r for r in view.room]
    # the restarted pods leave; each one placed counts for the inter-pod affinity of the next
    peers = remaining_peers(view, restarted)
    for pod in restarted:
        sched = pod.scheduling
        if sched is None or not pod.accelerated:
            continue  # every GPU pod by the one definition: whole, shared, MIG, AMD, DRA
        rules = None if peers is None else affinity_filter(view, pod, peers)
        home = next((r for r in rooms if r.name == view.node.name), None)
        if (
            home is not None
            and fits(sched, home)
            and (rules is None or rules.refusal(home.labels) is None)
        ):
            place(pod, home.name, peers)
            continue
        # kept apart from its replicas (required anti-affinity per node): not beside one;
        # with the peers read, every required pod (anti-)affinity term decides instead
        apart = sibling_nodes(view, pod) if sched.spread_from_siblings and peers is None else set()
        # GPUs held only through DRA claims: a node takes the pod when its room counts as many
        # free devices of each driver (``dra:DRIVER``, from ResourceSlices less allocated
        # claims); with the pod's devices unread, no node is known to have them free
        dra_only = pod.accelerator_request == 0 and bool(pod.resource_claims)
        if dra_only:
            sched = sched.model_copy(update={"requests": {**sched.requests, **dra_needs(pod)}})
        targets = [
            r.name
            for r in rooms
            if r.name != view.node.name
            and r.name not in apart
            and fits(sched, r)
            and not (dra_only and not pod.gpu_devices)
            and (rules is None or rules.refusal(r.labels) is None)
        ]
        cordoned = view.node.unschedulable
        if targets:
            place(pod, targets[0], peers)
            code = "restart_moves_cordoned" if cordoned else "restart_moves"
            notes.append(PlanNote(code=code, params={"pod": pod.key, "nodes": _names(targets)}))
            continue
        if cordoned:
            stranded = True
        preempt = []
        for room in rooms:
            chosen = victims(sched, priority, room)
            if chosen:
                preempt.append(f"{_names(chosen)} on {room.name}")
        notes.append(
            PlanNote(
                code="restart_pending",
                params={
                    "pod": pod.key,
                    "cordoned": "yes" if cordoned else None,
                    "preempt": "; ".join(preempt[:3]) or None,
                },
            )
        )
    return notes, stranded
