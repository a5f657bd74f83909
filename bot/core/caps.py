"""Tier 3: caps for the offending workload, computed from the evidence. Pure: no I/O.

Target: the verdict's pod (causes ``host_memory_workload``, ``shmem`` in a pod and
``container_limit``), whoever owns it (GPU pods included), changed through its top
controller's template (so its pods roll; ``restarts`` names them). A consumer outside
Kubernetes gets a manual runbook instead (``bot.core.relief``).

Not offered (warning ``gpu_container_at_own_limit``) for a ``container_limit`` verdict on a
pod that requests GPUs: the container is at its *own* limit, so a lower limit only kills the
training sooner and an unchanged one plus CPU / thread caps frees no host memory. The advice
for that case is a talking point (``ai.container_at_own_limit``): reduce the process's host
memory, or raise its limit where the node has room. A non-GPU offender keeps its plan.

Values (``Tier3Values``, editable in the confirmation modal):

- memory limit, when the node is short of host memory (``verdict.shortage_bytes``) and the
  consumer holds it: what the container holds (its pod's ledger line, anon + active file,
  the measure ``bot.core.relief`` counts; its working set when there is none) less the
  shortage, rounded *down* to whole GiB (Mi under 1 GiB) so the relief covers the shortage.
  Floor: half of what it holds (the domain story halves preprocess 64 -> 32 GiB; a deeper
  cut is a redesign, not an emergency cap); when the floor stops short of full relief the
  warning ``cap_floor_limits_relief`` says so (and the relief says "not the fix"). A
  container with a limit gets the lower of that and the overcommit cut below (warning
  ``limit_cut_to_shortage`` when the shortage decides); one with no limit (e.g. a GPU
  training pod) gets it with warning ``limit_set_from_shortage``.
- otherwise: cut the container's limit by what the node's limit total exceeds
  ``tier3_limits_target_ratio`` x allocatable, so the total lands under allocatable with
  headroom, rounded down. Without a needed cut the limit stays (warning
  ``memory_limit_unchanged``). An unbounded container gets its working set + 10%, within
  the room left (or regardless, warning ``limits_remain_overcommitted``). A limit
  under the current working set is flagged ``below_working_set`` + warning ``immediate_oom``:
  it is only proposed when the node's arithmetic requires it.
- memory request: ``memory_request_ratio`` (87.5%) of the new limit (domain: 28 of 32 GiB).
- CPU cap: the container's current CPU request in whole cores (the scheduler already
  reserved that much), else half its CPU limit; request = ``cpu_request_ratio`` of the cap.
- ``OMP_NUM_THREADS``: the CPU cap, or ``default_omp_threads`` when there is none; never
  above the container's current literal value (a cap does not raise the thread count).
"""

from __future__ import annotations

import math

from bot.core.actions import PATCHABLE_KINDS, ActionPlan, Step, Tier3Values
from bot.core.cluster import ClusterView, ContainerInfo, PodInfo
from bot.core.findings import Diagnosis
from bot.core.gangs import builtin_kind
from bot.core.plans import make_plan
from bot.core.quantity import canonical, quantity_value
from bot.core.resizes import in_place_plan
from bot.core.rollouts import rollout_notes
from bot.core.thresholds import DEFAULT, Thresholds

GIB = 1024**3
MIB = 1024**2
_OFFENDER_CAUSES = frozenset({"host_memory_workload", "container_limit", "shmem"})


def binary_text(value: int) -> str:
    """Bytes as Kubernetes binary quantity text, rounded down to Gi (or Mi under 1 GiB)."""
    if value >= GIB:
        return f"{value // GIB}Gi"
    return f"{max(1, value // MIB)}Mi"


def _round_down(value: int) -> int:
    return (value // GIB) * GIB if value >= GIB else max(MIB, (value // MIB) * MIB)


def _unavailable(view: ClusterView, code: str, target: str | None = None) -> ActionPlan:
    return make_plan(view.node.name, 3, [], target=target, available=False, warnings=[code])


def _target(pod: PodInfo) -> str:
    owner = pod.top_owner
    if owner is None:
        return f"Pod/{pod.key}"
    return f"{owner.kind}/{pod.namespace}/{owner.name}"


def _relief_limit(held: int, shortage: int) -> tuple[int | None, list[str]]:
    """The limit that gives the node's shortage back: what the container holds less the
    shortage, rounded down (so the relief covers it), never under the floor: half of what it
    holds (the domain's halving, 64 -> 32 GiB, is the deepest cut automated; deeper is a
    redesign, e.g. chunked processing, not an emergency cap). None when nothing is short."""
    if not shortage or not held:
        return None, []
    floor = _round_down(held // 2)
    wanted = _round_down(held - shortage) if held > shortage else 0
    if wanted < floor:
        return floor, ["cap_floor_limits_relief"]
    return wanted, []


def _memory_limit(
    view: ClusterView, info: ContainerInfo, ws: int, t: Thresholds, shortage: int = 0, held: int = 0
) -> tuple[int, list[str]]:
    row = next((r for r in view.allocated if r.resource == "memory"), None)
    total = int(row.limits_value) if row is not None else 0
    allocatable = int(row.allocatable_value or 0) if row is not None else 0
    target_total = int(allocatable * t.tier3_limits_target_ratio)
    current_raw = quantity_value(info.limits.get("memory"))
    current = int(current_raw) if current_raw else None
    relief, floor_warnings = _relief_limit(held or ws, shortage)
    if current:
        cut = total - target_total if allocatable else 0
        overcommit = _round_down(max(MIB, current - cut)) if cut > 0 else current
        if relief is not None and relief < overcommit:
            # the consumer holds what the node is short of: the cap gives it back
            return relief, ["limit_cut_to_shortage", *floor_warnings]
        if cut <= 0:
            return current, ["memory_limit_unchanged"]
        return overcommit, []
    room = target_total - total if allocatable else 0
    wanted = _round_down(int(ws * 1.1) + GIB - 1) if ws else GIB
    warnings: list[str] = []
    if relief is not None:
        # no limit today and the node is short: the cap gives the shortage back
        wanted = relief
        warnings += ["limit_set_from_shortage", *floor_warnings]
    if room <= 0:
        return wanted, [*warnings, "limits_remain_overcommitted"]
    return _round_down(min(wanted, room)), warnings


def _held(diagnosis: Diagnosis, pod_key: str, container_ws: int) -> int:
    """What the container holds of the node's memory as the relief counts it (the pod's
    ledger line, anon + active file: slightly below its working set), or its working set."""
    line = next(
        (e.bytes for e in diagnosis.ledger.entries if e.category == "pod" and e.pod_key == pod_key),
        None,
    )
    pod_ws = diagnosis.verdict.params.get("working_set_bytes")
    if line is None or not isinstance(pod_ws, int | float) or not container_ws:
        return container_ws
    return max(0, container_ws - max(0, int(pod_ws) - line))


def _cpu(info: ContainerInfo, t: Thresholds) -> tuple[str | None, str | None, int]:
    request, limit = (
        quantity_value(info.requests.get("cpu")),
        quantity_value(info.limits.get("cpu")),
    )
    cap: int | None = None
    if request and request >= 1:
        cap = int(request)
    elif limit:
        cap = max(1, int(limit // 2))
    current_omp = _omp(info)
    if cap is None:
        omp = t.default_omp_threads
        return None, None, min(omp, current_omp) if current_omp else omp
    request_m = max(1, math.floor(cap * 1000 * t.cpu_request_ratio))
    return str(cap), canonical(f"{request_m}m"), min(cap, current_omp) if current_omp else cap


def _omp(info: ContainerInfo) -> int | None:
    """The container's literal OMP_NUM_THREADS (a cap never raises it), None if unset."""
    text = info.env.get("OMP_NUM_THREADS", "").strip()
    return int(text) if text.isdecimal() and int(text) > 0 else None


def plan_tier3(
    view: ClusterView, diagnosis: Diagnosis, *, thresholds: Thresholds = DEFAULT
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

    shortage = verdict.shortage_bytes if verdict.cause != "container_limit" else 0
    held = _held(diagnosis, pod.key, ws)
    limit, warnings = _memory_limit(view, info, ws, t, shortage, held)
    request = max(MIB, (int(limit * t.memory_request_ratio) // MIB) * MIB)
    cpu_limit, cpu_request, omp = _cpu(info, t)
    below = bool(ws) and limit < ws
    if below:
        warnings.append("immediate_oom")
    if pod.accelerated:
        warnings.append("offender_is_gpu_workload")
    values = Tier3Values(
        container=info.name,
        memory_limit=binary_text(limit),
        memory_request=binary_text(request)
        if request >= GIB and request % GIB == 0
        else f"{request // MIB}Mi",
        cpu_limit=cpu_limit,
        cpu_request=cpu_request,
        omp_num_threads=omp,
        current_working_set_bytes=ws or None,
        memory_limit_bytes=limit,
        below_working_set=below,
    )
    requests = {"memory": values.memory_request}
    limits = {"memory": values.memory_limit}
    if cpu_limit is not None and cpu_request is not None:
        requests["cpu"], limits["cpu"] = cpu_request, cpu_limit
    step = Step(
        verb="patch_resources",
        kind=owner.kind,
        namespace=pod.namespace,
        name=owner.name,
        params={
            "container": info.name,
            "requests": requests,
            "limits": limits,
            "env": {"OMP_NUM_THREADS": str(omp)},
        },
    )
    restarts = sorted(
        p.key
        for p in view.pods
        if p.top_owner is not None
        and (p.top_owner.kind, p.namespace, p.top_owner.name)
        == (owner.kind, pod.namespace, owner.name)
    )
    warnings.append("template_change_restarts_pods")
    restarted = [p for p in view.pods if p.key in restarts]
    if any(p.has_emptydir for p in restarted):
        warnings.append("emptydir_lost_on_restart")
    template = make_plan(
        view.node.name,
        3,
        [step],
        target=target,
        blast_radius=restarts,
        restarts=restarts,
        reversible=True,
        values=values,
        warnings=warnings,
        notes=rollout_notes(
            view, owner.kind, pod.namespace, owner.name, pods=restarted, resources=True
        ),
    )
    # where the server resizes in place, only the offender changes and nothing restarts
    return in_place_plan(view, pod, template) or template
