"""Tier 3: caps for the offending workload, computed from the evidence. Pure: no I/O.

Target: the verdict's pod (causes ``host_memory_workload``, ``shmem`` in a pod and
``container_limit``), whoever owns it (GPU pods included), changed through its top
controller's template (so its pods roll; ``restarts`` names them). A consumer outside
Kubernetes gets a manual runbook instead (``bot.core.remedies.relief``,
``bot.core.remedies.runbooks``).

Not offered (warning ``gpu_container_at_own_limit``) for a ``container_limit`` verdict on a
pod that requests GPUs: the container is at its *own* limit, so a lower limit only kills the
training sooner. The advice for that case is a talking point (``ai.container_at_own_limit``).

The capped container is the one that holds the memory (the verdict's ``container``: the
largest of its pod, a native sidecar included). A cap is **per container, per pod**: the
template's limit applies to that container in every replica. So every number is worked out
per pod, over the owner's pods on this node (``holds``: what the container holds in each,
its working set, ``bot.core.remedies.relief.container_holdings``; without those, its pod's ledger
line bounded by the verdict's container):

- node short (``verdict.shortage_bytes``): the highest limit at which the owner's pods on the
  node together give the shortage back, plus headroom (``bot.core.model.plans.relief_target``):
  water-filling over their holdings (48 replicas share an 18 GiB shortage, about 0.4 GiB
  each), rounded *down* to whole GiB (quarter GiB under 16 GiB, MiB under 1 GiB).
  Warning ``limit_cut_to_shortage`` (a container with a limit) or ``limit_set_from_shortage``
  (one without).
- not short: the node-wide excess of limits over ``tier3_limits_target_ratio`` x allocatable
  is *shared* across the owner's pods on the node (each gives ``excess / n``); an unbounded
  container gets its working set + 10% within the room left per pod.
- floor, always: half of the most the container holds in any of those pods, rounded *up*
  (the domain halves preprocess 64 -> 32 GiB; a deeper cut is a redesign, not an emergency
  cap). When the floor stops short: ``cap_floor_limits_relief`` (short) or
  ``limits_remain_overcommitted``. A cap never raises a limit; one that changes nothing is
  not offered (``memory_limit_unchanged``). A limit under a pod's working set is flagged
  ``below_working_set`` + warning ``immediate_oom``.
- memory request: ``memory_request_ratio`` (87.5%) of the new limit (domain: 28 of 32 GiB),
  never above what the container requests today (an emergency cap does not reserve more:
  raising a leaking pod's request reserves the leak, and its new pods may fit nowhere), so
  never above the limit and never a leaking pod's current holding.
- CPU: untouched. No verdict gpunode gives is about CPU; a CPU limit throttles and frees no
  memory (#20, #23). ``OMP_NUM_THREADS`` changes only where the container already sets it
  above its CPU request in whole cores: threads beyond the cores it is given add per-thread
  memory (stacks, malloc arenas, per-thread buffers) and no speed, so it is lowered to that
  request; anywhere else the plan leaves the environment alone.

Blast radius: the template change rolls every replica of the owner, here and on other nodes
(``WorkloadInfo.elsewhere``): ``blast_radius`` names them all, ``restarts`` the ones on this
node (what the relief counts), and the note ``rolls_other_nodes`` names the others.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from bot.core.diagnosis.findings import Diagnosis
from bot.core.model.actions import PATCHABLE_KINDS, ActionPlan, PlanNote, Step, Tier3Values
from bot.core.model.cluster import ClusterView, ContainerInfo, PodInfo
from bot.core.model.gangs import builtin_kind
from bot.core.model.plans import make_plan, relief_target
from bot.core.model.quantity import quantity_value
from bot.core.model.thresholds import DEFAULT, Thresholds
from bot.core.remedies.resizes import in_place_plan
from bot.core.remedies.rollouts import MAX_NAMES, partition_held_keys, rollout_notes, workload_of

GIB = 1024**3
MIB = 1024**2
_OFFENDER_CAUSES = frozenset({"host_memory_workload", "container_limit", "shmem"})
#: pod key -> container name -> bytes the container holds (anon + active file)
Holdings = Mapping[str, Mapping[str, int]]


def binary_text(value: int) -> str:
    """Bytes as Kubernetes binary quantity text as people write it: whole ``Gi`` when the
    value is a whole number of GiB, else ``Mi`` (rounded down)."""
    if value >= GIB and value % GIB == 0:
        return f"{value // GIB}Gi"
    return f"{max(1, value // MIB)}Mi"


#: below this a cap moves in quarter-GiB steps: on a 4.75 GiB container a whole-GiB step
#: would cut 0.75 GiB per pod where 0.4 GiB gives the shortage back (48 replicas: 37 GiB
#: freed for an 18 GiB shortage, and a deeper OOM risk for nothing)
FINE_BELOW = 16 * GIB
QUARTER = GIB // 4


def _step(value: int) -> int:
    return GIB if value >= FINE_BELOW else QUARTER if value >= GIB else MIB


def _round_down(value: int) -> int:
    step = _step(value)
    return max(MIB, (value // step) * step)


def _round_up(value: int) -> int:
    step = _step(value)
    return -(-value // step) * step


def _unavailable(view: ClusterView, code: str, target: str | None = None) -> ActionPlan:
    return make_plan(view.node.name, 3, [], target=target, available=False, warnings=[code])


def _target(pod: PodInfo) -> str:
    owner = pod.top_owner
    if owner is None:
        return f"Pod/{pod.key}"
    return f"{owner.kind}/{pod.namespace}/{owner.name}"


def level(holds: list[int], shortage: int) -> int:
    """The highest per-pod limit at which pods holding ``holds`` together free ``shortage``
    (each frees what it holds above the limit): water-filling from the largest down. 0 when
    even a zero limit would not free it."""
    ordered = sorted(holds, reverse=True)
    total = 0
    for k, held in enumerate(ordered, start=1):
        total += held
        limit = (total - shortage) // k
        below = ordered[k] if k < len(ordered) else 0
        if limit >= below:
            return max(0, limit)
    return 0


def _memory_limit(
    view: ClusterView, info: ContainerInfo, holds: list[int], ws: int, t: Thresholds, shortage: int
) -> tuple[int, list[str]]:
    """The container's new limit per pod and why (module docstring). ``holds``: what the
    container holds in each of the owner's pods on the node; ``ws``: the largest working set."""
    row = next((r for r in view.allocated if r.resource == "memory"), None)
    total = int(row.limits_value) if row is not None else 0
    allocatable = int(row.allocatable_value or 0) if row is not None else 0
    target_total = int(allocatable * t.tier3_limits_target_ratio)
    pods = max(1, len(holds))
    most = max([*holds, ws])
    floor = _round_up(-(-most // 2)) if most else MIB
    current_raw = quantity_value(info.limits.get("memory"))
    current = int(current_raw) if current_raw else None
    warnings: list[str] = []
    if shortage and most:
        wanted = _round_down(level(holds or [ws], relief_target(shortage)))
        warnings.append("limit_cut_to_shortage" if current else "limit_set_from_shortage")
        if wanted < floor:
            wanted = floor
            warnings.append("cap_floor_limits_relief")
    elif current:
        cut = total - target_total if allocatable else 0
        if cut <= 0:
            return current, ["memory_limit_unchanged"]
        wanted = _round_down(max(MIB, current - -(-cut // pods)))
        if wanted < floor:
            wanted = floor
            warnings.append("limits_remain_overcommitted")
    else:
        # no limit today: its working set + 10%, within the room each pod has left
        room = (target_total - total) // pods if allocatable else 0
        wanted = max(floor, _round_up(int(ws * 1.1)) if ws else GIB)
        if room < wanted:
            wanted = max(floor, _round_down(room)) if room > 0 else wanted
        if room < wanted:
            warnings.append("limits_remain_overcommitted")
    if current and wanted >= current:
        return current, ["memory_limit_unchanged"]
    return wanted, warnings


def _request(info: ContainerInfo, limit: int, t: Thresholds) -> int:
    """``memory_request_ratio`` of the limit, never above today's request (module docstring)."""
    request = _round_down(int(limit * t.memory_request_ratio))
    current = quantity_value(info.requests.get("memory"))
    if current:
        request = min(request, int(current))
    return min(request, limit)


def _fallback_holds(diagnosis: Diagnosis, pod_key: str, container_ws: int) -> int:
    """What the verdict's container holds when no per-container holdings were given: its
    pod's ledger line less what the rest of the pod holds (the ledger counts anon + active
    file, slightly below the working set), or its working set."""
    line = _ledger(diagnosis).get(pod_key)
    pod_ws = diagnosis.verdict.params.get("working_set_bytes")
    if line is None or not isinstance(pod_ws, int | float) or not container_ws:
        return container_ws
    return max(0, container_ws - max(0, int(pod_ws) - line))


def _ledger(diagnosis: Diagnosis) -> dict[str, int]:
    return {
        e.pod_key: e.bytes
        for e in diagnosis.ledger.entries
        if e.category == "pod" and e.pod_key is not None
    }


def container_holds(
    diagnosis: Diagnosis, pods: list[str], container: str, holdings: Holdings | None, ws: int
) -> dict[str, int]:
    """What ``container`` holds in each of ``pods`` (key -> bytes). From ``holdings`` where
    the node reported the container; else the verdict pod's own figure, and for the other
    pods their ledger line bounded by it (a replica's container is not assumed to hold more
    than the one the verdict measured, so the relief is never overclaimed)."""
    pod_key = diagnosis.verdict.params.get("pod")
    mine = _fallback_holds(diagnosis, str(pod_key), ws)
    ledger = _ledger(diagnosis)
    out: dict[str, int] = {}
    for key in pods:
        given = (holdings or {}).get(key, {}).get(container)
        if given is not None:
            out[key] = given
        elif key == pod_key:
            out[key] = mine
        else:
            out[key] = min(ledger.get(key, 0), mine)
    return out


def _omp(info: ContainerInfo) -> int | None:
    """OMP_NUM_THREADS lowered to the container's CPU request in whole cores, only where it
    already sets a literal value above that; None leaves the environment alone."""
    text = info.env.get("OMP_NUM_THREADS", "").strip()
    current = int(text) if text.isdecimal() and int(text) > 0 else None
    cpu = quantity_value(info.requests.get("cpu"))
    if current is None or not cpu:
        return None
    cores = max(1, math.floor(cpu))
    return cores if current > cores else None


def _same_owner(p: PodInfo, kind: str, namespace: str, name: str) -> bool:
    o = p.top_owner
    return o is not None and (o.kind, p.namespace, o.name) == (kind, namespace, name)


def plan_tier3(
    view: ClusterView,
    diagnosis: Diagnosis,
    *,
    thresholds: Thresholds = DEFAULT,
    holdings: Holdings | None = None,
) -> ActionPlan:
    t = thresholds
    verdict = diagnosis.verdict
    pod_key = verdict.params.get("pod")
    if verdict.cause not in _OFFENDER_CAUSES or not isinstance(pod_key, str):
        return _unavailable(view, "no_offender")
    pod: PodInfo | None = next((p for p in view.pods if p.key == pod_key), None)
    if pod is None:
        return _unavailable(view, "offender_not_in_view", target=pod_key)
    if verdict.cause == "container_limit" and pod.accelerated:
        return _unavailable(view, "gpu_container_at_own_limit", target=_target(pod))
    owner = pod.top_owner
    if owner is None:
        return _unavailable(view, "offender_has_no_controller", target=f"Pod/{pod_key}")
    target = f"{owner.kind}/{pod.namespace}/{owner.name}"
    if builtin_kind(owner) in ("Job", "CronJob"):
        return _unavailable(view, "job_template_immutable", target=target)
    if builtin_kind(owner) not in PATCHABLE_KINDS:
        return _unavailable(view, "controller_kind_unsupported", target=target)
    name = verdict.params.get("container")
    regular = [c for c in pod.containers if not c.init or c.sidecar]
    info = next((c for c in regular if c.name == name), regular[0] if regular else None)
    if info is None:
        return _unavailable(view, "offender_has_no_containers", target=target)
    ws_raw = verdict.params.get(
        "container_working_set_bytes", verdict.params.get("working_set_bytes")
    )
    ws = int(ws_raw) if isinstance(ws_raw, int | float) and ws_raw > 0 else 0

    group = sorted(
        (
            p
            for p in view.pods
            if _same_owner(p, owner.kind, pod.namespace, owner.name)
            and not p.deleting
            and p.phase not in ("Succeeded", "Failed")
        ),
        key=lambda p: p.key,
    )
    # a StatefulSet's partition keeps lower ordinals on the old template: they do not
    # restart, so they neither take the cap nor count in its relief
    held = partition_held_keys(view, owner.kind, pod.namespace, owner.name, [p.key for p in group])
    if pod.key in held:
        return _unavailable(view, "partition_holds_offender", target=target)
    reached = [p for p in group if p.key not in held]
    holds = container_holds(diagnosis, [p.key for p in reached], info.name, holdings, ws)
    shortage = verdict.shortage_bytes if verdict.cause != "container_limit" else 0
    limit, warnings = _memory_limit(view, info, list(holds.values()), ws, t, shortage)
    if "memory_limit_unchanged" in warnings:
        # a cap that changes no limit frees nothing; CPU is not touched (module docstring)
        return _unavailable(view, "memory_limit_unchanged", target=target)
    request = _request(info, limit, t)
    omp = _omp(info)
    below = limit < max([ws, *holds.values()])
    if below:
        warnings.append("immediate_oom")
    if pod.accelerated:
        warnings.append("offender_is_gpu_workload")
    values = Tier3Values(
        container=info.name,
        memory_limit=binary_text(limit),
        memory_request=binary_text(request),
        omp_num_threads=omp,
        current_working_set_bytes=ws or None,
        memory_limit_bytes=limit,
        below_working_set=below,
    )
    step = Step(
        verb="patch_resources",
        kind=owner.kind,
        namespace=pod.namespace,
        name=owner.name,
        params={
            "container": info.name,
            "requests": {"memory": values.memory_request},
            "limits": {"memory": values.memory_limit},
            "env": {"OMP_NUM_THREADS": str(omp)} if omp is not None else {},
        },
    )
    restarts = [p.key for p in reached]
    workload = workload_of(view, owner.kind, pod.namespace, owner.name)
    elsewhere = dict(sorted(workload.elsewhere.items())) if workload is not None else {}
    held_elsewhere = partition_held_keys(
        view, owner.kind, pod.namespace, owner.name, list(elsewhere)
    )
    elsewhere = {k: v for k, v in elsewhere.items() if k not in held_elsewhere}
    warnings.append("template_change_restarts_pods")
    if any(p.has_emptydir for p in reached):
        warnings.append("emptydir_lost_on_restart")
    notes = rollout_notes(
        view,
        owner.kind,
        pod.namespace,
        owner.name,
        pods=group,
        resources=True,
        container=info.name,
    )
    if any(n.code == "kueue_no_quota" for n in notes):
        return _unavailable(view, "kueue_queue_full", target=target)
    if elsewhere:
        replicas = workload.replicas if workload is not None else None
        notes.append(_elsewhere_note(target, len(reached), elsewhere, replicas))
    template = make_plan(
        view.node.name,
        3,
        [step],
        target=target,
        blast_radius=restarts + [k for k in elsewhere if k not in holds],
        restarts=restarts,
        reversible=True,
        values=values,
        warnings=warnings,
        notes=notes,
    )
    # where the server resizes in place, only the offender changes and nothing restarts
    return in_place_plan(view, pod, template) or template


def _elsewhere_note(
    target: str, here: int, elsewhere: dict[str, str], replicas: int | None
) -> PlanNote:
    """``rolls_other_nodes``: the template change rolls the replicas on other nodes too."""
    shown = [f"{key} on {node}" for key, node in list(elsewhere.items())[:MAX_NAMES]]
    more = len(elsewhere) - len(shown)
    return PlanNote(
        code="rolls_other_nodes",
        params={
            "workload": target,
            "count": replicas if replicas is not None else here + len(elsewhere),
            "here": here,
            "elsewhere": len(elsewhere),
            "pods": ", ".join(shown) + (f" and {more} more" if more > 0 else ""),
        },
    )
