"""Tiered remedy plans, as data, from the cluster view and the diagnosis. Pure: no I/O.

No tier on a node that is not at risk (``node_at_risk``: not short of host memory, no
``MemoryPressure`` or memory stall, no kubelet eviction, no global OOM kill): every plan is
unavailable with warning ``node_not_at_risk``, and the ops team hears that there is nothing to
do and why (``bot.core.reporting.points.tiers``). A cap, an eviction or a priority change on a
healthy node only costs restarts.

Tier 1, stop the cascade: cordon the node, evict the *fewest* non-critical pods that give the
shortage back. "Non-critical" means: requests no GPU AND priority below
``critical_priority_threshold``. Never evicted (listed in ``protected`` with the reason):
mirror (static) pods, DaemonSet pods, diagnostic pods (label ``gpunode.io/role=diagnostic``),
gpunode's own pods, pods labelled ``<protected_label>=true``, pods annotated for the
autoscalers (``karpenter.sh/do-not-disrupt``, ``cluster-autoscaler.kubernetes.io/
safe-to-evict: "false"``, ``bot.core.remedies.autoscalers``), critical-priority pods
(priority >= threshold or a ``system-`` class), members of a training gang, GPU or CPU-only
(``bot.core.model.gangs``; a note names the gang, its members elsewhere and what evicting one would
do), GPU pods (whole GPUs, MIG slices, shared GPUs, DRA claims: the training we protect), and
pods without a controller unless ``force_unmanaged`` (nothing would recreate them).
Terminating and finished pods are skipped silently. Evicted ``batch/v1`` Job pods get a note
on ``backoffLimit`` (``bot.core.remedies.safety``).

Before eviction, each evicted pod's landing is checked (``bot.core.remedies.destinations``): a pod
that fits nowhere but matches an autoscaled pool makes the autoscaler add a node (a GPU node,
for a CPU pod pinned to the GPU pool: warning ``evicted_pod_buys_gpu_node``), else it
stays Pending; notes name each such pod.

The cordoned node is marked against scale-down for the incident (step ``annotate_node``:
the annotations of ``bot.core.remedies.autoscalers.NODE_PROTECTION`` it lacks); its undo, run by
Undo or at resolve, removes exactly what it added.

Which of the evictable pods go: the kubelet's own ranking under memory pressure (pods whose
usage exceeds their request first, then lower priority, then more usage above the request;
kubelet ``rankMemoryPressure``), taken in that order until their memory (ledger lines) covers
the shortage plus headroom (``bot.core.model.plans.relief_target``: 10% of it, at least 1 GiB; a
node under pressure but not short: the headroom alone). Every evictable pod after that is
named in ``protected`` with reason ``not_needed`` (left alone: the ones before it already
cover it). When even all of
them fall short, all go and the relief says it is not enough.

PodDisruptionBudgets (``view.budgets``, their status as read): a pod whose eviction the API
would refuse now (its budget allows no disruption, or the plan's earlier evictions used the
budget's allowance up; ``bot.core.remedies.budgets``) is never put in the plan: the planner
picks around it in the same order and names it in ``protected`` with its budget and counts
(reason ``pdb_blocked``, "needs 1 healthy, has 1"), so the relief never counts it and the
approver reads the block before approving. Such pods are named whether or not the shortage
needed them; a non-critical pod left alone for another reason (a bare pod, a protected label,
an autoscaler annotation) that a budget pins carries the budget's refusal too.

Tier 2, protect the critical workload (offered only when the training is at risk on this
node, ``training_at_risk``: else unavailable, warning ``training_not_at_risk``; never for
the verdict's consumer, ``consumer_group``; never for a Guaranteed pod, which stays within
its request, so priority would change its eviction rank only among pods within theirs and
its oom_score_adj not at all: warning ``guaranteed_within_requests``): ensure a
PriorityClass (``preemptionPolicy: Never``) and set it on the top controllers of the GPU
pods; notes say how the controller rolls and where each restarted GPU pod goes
(``bot.core.remedies.rollouts``; refused on a cordoned node when a restarted pod fits nowhere). Pod
priority is immutable, so the template change rolls every pod of the controller that its
rollout reaches (a StatefulSet's partition holds lower ordinals): ``restarts`` names them.
Bare pods and Jobs (immutable template) cannot be changed: warning codes, and the plan is
unavailable when nothing is left. The "request
slightly below limit" advice stays a talking point (not automated).

Tier 3, constrain the offender (the verdict's pod, through its top controller): see
``bot.core.remedies.caps`` for how the values are computed from the evidence.

``plan_id``: see ``bot.core.model.plans``.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from bot.core.diagnosis.findings import Diagnosis
from bot.core.model.actions import (
    PATCHABLE_KINDS,
    ActionPlan,
    AnnotateNodeParams,
    PatchResourcesParams,
    PlanNote,
    ProtectedPod,
    ResizePodParams,
    Step,
)
from bot.core.model.cluster import ClusterView, PodInfo
from bot.core.model.gangs import builtin_kind, gang_of
from bot.core.model.plans import HEADROOM_MIN, make_plan, plan_id, relief_target
from bot.core.model.refs import ObjectRef
from bot.core.model.thresholds import DEFAULT, Thresholds
from bot.core.remedies.autoscalers import pod_protection, protection_to_add
from bot.core.remedies.budgets import Budgets
from bot.core.remedies.caps import Holdings, plan_tier3
from bot.core.remedies.destinations import landing_notes
from bot.core.remedies.relief import runbook_plan, with_relief
from bot.core.remedies.rollouts import held_by_partition, restart_notes, rollout_notes
from bot.core.remedies.safety import gang_notes, is_self, job_notes

PROTECTED_LABEL = "gpunode.io/protected"
ROLE_LABEL = "gpunode.io/role"
DEFAULT_PRIORITY_CLASS = "gpunode-critical-training"
CRITICAL_PRIORITY = DEFAULT.critical_priority_threshold
#: reasons that leave a non-critical pod alone; a budget that pins it is named beside them
_ASKED_TO_STAY = frozenset(
    {"no_controller", "protected_label", "do_not_disrupt", "safe_to_evict_false"}
)

__all__ = [
    "DEFAULT_PRIORITY_CLASS",
    "PROTECTED_LABEL",
    "make_plan",
    "node_at_risk",
    "plan_all",
    "plan_id",
    "plan_tier1",
    "plan_tier2",
    "plan_tier3",
    "protection_reason",
    "undo_steps",
]


def _terminal(pod: PodInfo) -> bool:
    return pod.deleting or pod.phase in ("Succeeded", "Failed")


def protection_reason(
    pod: PodInfo,
    *,
    protected_label: str = PROTECTED_LABEL,
    critical_priority_threshold: int = CRITICAL_PRIORITY,
    force_unmanaged: bool = False,
    bot_namespace: str | None = None,
    now: datetime | None = None,
) -> str | None:
    """Why tier 1 must not evict this pod, or None when it is non-critical and evictable.

    gpunode's own pods and gang members (``bot.core.remedies.safety``, ``bot.core.model.gangs``) are
    protected too: a gang member, GPU or CPU-only (launcher, head, driver), is never evicted
    silently. So is a pod its owner annotated for the autoscalers (``karpenter.sh/
    do-not-disrupt``, ``cluster-autoscaler.kubernetes.io/safe-to-evict: "false"``;
    ``bot.core.remedies.autoscalers``; ``now`` ends a duration-valued do-not-disrupt)."""
    if pod.is_mirror:
        return "mirror"
    if pod.is_daemonset or builtin_kind(pod.top_owner) == "DaemonSet":
        return "daemonset"
    if pod.labels.get(ROLE_LABEL) == "diagnostic":
        return "diagnostic"
    if is_self(pod, bot_namespace):
        return "gpunode_itself"
    if pod.labels.get(protected_label, "").lower() == "true":
        return "protected_label"
    if (asked := pod_protection(pod, now=now)) is not None:
        return asked
    if pod.priority >= critical_priority_threshold or (pod.priority_class_name or "").startswith(
        "system-"
    ):
        return "critical_priority"
    if gang_of(pod) is not None:
        return "gang_member"
    if pod.accelerated:
        return "gpu_workload"
    if not pod.owners and not force_unmanaged:
        return "no_controller"
    return None


def _usage(diagnosis: Diagnosis | None) -> dict[str, int]:
    if diagnosis is None:
        return {}
    return {  # the working set: what the kubelet ranks and what eviction gives back
        e.pod_key: e.figure
        for e in diagnosis.ledger.entries
        if e.category == "pod" and e.pod_key is not None
    }


def eviction_order(pods: list[PodInfo], usage: dict[str, int]) -> list[PodInfo]:
    """``pods`` in the order the kubelet evicts them under memory pressure: usage above the
    request first, then lower priority first, then more usage above the request first
    (kubelet ``rankMemoryPressure``: exceedMemoryRequests, priority, memory)."""

    def key(p: PodInfo) -> tuple[bool, int, int, str]:
        used = usage.get(p.key, 0)
        above = used - p.memory_request_bytes
        return (not above > 0, p.priority, -above, p.key)

    return sorted(pods, key=key)


def plan_tier1(
    view: ClusterView,
    diagnosis: Diagnosis | None = None,
    *,
    force_unmanaged: bool = False,
    protected_label: str = PROTECTED_LABEL,
    critical_priority_threshold: int = CRITICAL_PRIORITY,
) -> ActionPlan:
    node = view.node.name
    if diagnosis is not None and not node_at_risk(diagnosis):
        return _not_at_risk(view, 1)
    protected: list[ProtectedPod] = []
    evictable: list[PodInfo] = []
    budgets = Budgets(view.budgets)
    for pod in sorted(view.pods, key=lambda p: p.key):
        if _terminal(pod):
            continue
        reason = protection_reason(
            pod,
            protected_label=protected_label,
            critical_priority_threshold=critical_priority_threshold,
            force_unmanaged=force_unmanaged,
            bot_namespace=view.bot_namespace,
            now=view.observed_at,
        )
        if reason in _ASKED_TO_STAY and (refused := budgets.refusal(pod)) is not None:
            # a non-critical pod left alone anyway (a bare pod, or its owner asked): its
            # budget would refuse it too (even forced), which the approver reads as well
            protected.append(refused.model_copy(update={"reason": reason}))
        elif reason is not None:
            protected.append(ProtectedPod.model_validate({"pod": pod.key, "reason": reason}))
        else:
            evictable.append(pod)
    usage = _usage(diagnosis)
    needed = (
        relief_target(diagnosis.verdict.shortage_bytes) or HEADROOM_MIN
        if diagnosis is not None
        else None
    )
    evicted: list[PodInfo] = []
    freed = 0
    for pod in eviction_order(evictable, usage):
        if (refused := budgets.refusal(pod)) is not None:
            # the eviction API would refuse it (429): never in the plan, never in its relief
            protected.append(refused)
            continue
        if needed is not None and freed >= needed:
            protected.append(ProtectedPod(pod=pod.key, reason="not_needed"))
            continue
        evicted.append(pod)
        budgets.spend(pod)
        freed += usage.get(pod.key, 0)
    steps = [Step(verb="cordon", kind="Node", name=node)]
    if add := protection_to_add(view.node.annotations):
        # keep the autoscalers from removing the node under the incident; undone at resolve
        params = AnnotateNodeParams(annotations=dict(add))
        steps.append(Step(verb="annotate_node", kind="Node", name=node, params=params))
    steps += [Step(verb="evict", kind="Pod", namespace=p.namespace, name=p.name) for p in evicted]
    warnings: list[str] = []
    if view.node.unschedulable:
        warnings.append("already_cordoned")
    if not evicted:
        warnings.append("no_pods_to_evict")
    if force_unmanaged and any(not p.owners for p in evicted):
        warnings.append("unmanaged_pods_deleted_for_good")
    if any(p.has_emptydir for p in evicted):
        warnings.append("emptydir_data_lost")
    kept = {p.pod for p in protected if p.reason == "gang_member"}
    notes = gang_notes(view, [p for p in view.pods if p.key in kept]) + job_notes(view, evicted)
    landed = landing_notes(view, evicted)
    notes += landed
    if any(n.code == "evicted_buys_gpu_node" for n in landed):
        warnings.append("evicted_pod_buys_gpu_node")
    return make_plan(
        node,
        1,
        steps,
        target=f"Node/{node}",
        blast_radius=[p.key for p in evicted],
        protected=protected,
        reversible=not evicted,
        warnings=warnings,
        notes=notes,
    )


def _not_at_risk(view: ClusterView, tier: Literal[1, 2, 3]) -> ActionPlan:
    """A tier not offered: the node is not at risk (module docstring)."""
    return make_plan(view.node.name, tier, [], available=False, warnings=["node_not_at_risk"])


def plan_tier2(
    view: ClusterView,
    diagnosis: Diagnosis | None = None,
    *,
    priority_class: str = DEFAULT_PRIORITY_CLASS,
    priority_value: int = CRITICAL_PRIORITY,
    critical_priority_threshold: int = CRITICAL_PRIORITY,
) -> ActionPlan:
    node = view.node.name
    warnings: list[str] = []
    controllers: dict[ObjectRef, list[PodInfo]] = {}
    gpu_pods = [p for p in view.pods if p.accelerated and not _terminal(p)]
    consumer = consumer_group(diagnosis)
    at_risk = diagnosis is None or training_at_risk(diagnosis)
    if not at_risk and gpu_pods:
        warnings.append("training_not_at_risk")
    for pod in sorted(gpu_pods, key=lambda p: p.key):
        if pod.priority >= critical_priority_threshold:
            continue
        if pod.qos_class == "guaranteed":
            # memory limit = request: its usage never exceeds its request, so the kubelet
            # already ranks it after every pod that does (rankMemoryPressure), and the OOM
            # killer's oom_score_adj is -997 by QoS whatever the priority. A priority would
            # only order it among pods within their requests: not worth its restart.
            warnings.append("guaranteed_within_requests")
            continue
        owner = pod.top_owner
        if consumer is not None and consumer in (pod.key, _group_of(pod)):
            warnings.append("consumer_not_protected")
            continue
        if owner is None:
            warnings.append("bare_pod_priority_immutable")
            continue
        if builtin_kind(owner) in ("Job", "CronJob"):
            warnings.append("job_template_immutable")
            continue
        if builtin_kind(owner) not in PATCHABLE_KINDS or builtin_kind(owner) == "DaemonSet":
            # a DaemonSet is node infrastructure, not the training: its priority is not ours
            warnings.append("controller_kind_unsupported")
            continue
        controllers.setdefault(ObjectRef(owner.kind, pod.namespace, owner.name), []).append(pod)
    # every pod of a chosen controller restarts, GPU or not (same template)
    for pod in view.pods:
        owner = pod.top_owner
        ref = ObjectRef(owner.kind, pod.namespace, owner.name) if owner is not None else None
        if ref is not None and ref in controllers:
            group = controllers[ref]
            if pod not in group:
                group.append(pod)
    if not gpu_pods:
        warnings.append("no_gpu_workloads")
    elif not controllers and at_risk and not warnings:
        warnings.append("already_critical_priority")
    steps: list[Step] = []
    restarts: list[str] = []
    notes: list[PlanNote] = []
    stranded = False
    if controllers:
        existing = {pc.name: pc for pc in view.priority_classes}
        if priority_class in existing and existing[priority_class].value != priority_value:
            warnings.append("priority_class_value_differs")
        if priority_class in existing and existing[priority_class].preemption_policy != "Never":
            warnings.append("priority_class_preempts")
        steps.append(
            Step(
                verb="ensure_priority_class",
                kind="PriorityClass",
                name=priority_class,
                params={
                    "value": priority_value,
                    "description": "gpunode: critical GPU training",
                    "preemption_policy": "Never",
                },
            )
        )
        for ref in sorted(controllers):
            kind, ns, name = ref
            steps.append(
                Step(
                    verb="set_priority_class",
                    kind=kind,
                    namespace=ns,
                    name=name,
                    params={"priority_class": priority_class},
                )
            )
            held = held_by_partition(view, kind, ns, name, controllers[ref])
            restarts += sorted(p.key for p in controllers[ref] if p not in held)
            notes += rollout_notes(view, kind, ns, name, pods=controllers[ref], resources=False)
            if kind == "StatefulSet":
                warnings.append("statefulset_restarts_one_by_one")
            elif kind == "ReplicaSet":
                warnings.append("replicaset_template_does_not_roll")
        warnings.append("pod_priority_immutable_restarts")
        restarted = [p for group in controllers.values() for p in group if p.key in restarts]
        if not restarts:  # a partition keeps every GPU pod on the old template
            warnings.append("partition_holds_gpu_pods")
        if any(n.code == "kueue_no_quota" for n in notes):
            warnings.append("kueue_queue_full")
        placed, stranded = restart_notes(view, restarted, priority=priority_value)
        notes += placed
        if stranded:
            warnings.append("restarts_cannot_return")
    kinds = sorted(controllers)
    return make_plan(
        node,
        2,
        steps,
        target=kinds[0].key if len(kinds) == 1 else None,
        blast_radius=restarts,
        restarts=restarts,
        reversible=True,
        warnings=sorted(set(warnings), key=warnings.index),
        notes=notes,
        available=bool(restarts)
        and not stranded
        and at_risk
        and "kueue_queue_full" not in warnings,
    )


_HOST_CONSUMER_CAUSES = frozenset({"host_memory_workload", "shmem", "container_limit"})
#: findings that put the GPU pods at risk of a kubelet eviction or the kernel's OOM killer
_RISK_CODES = frozenset(
    {"NODE_MEMORY_PRESSURE", "MEMORY_PRESSURE_STALL", "POD_EVICTED_EVENTS", "SYSTEM_OOM_EVENTS"}
)


def node_at_risk(diagnosis: Diagnosis) -> bool:
    """Whether the node's pods (the GPU pods among them) are at risk: the node is
    short of host memory (``verdict.shortage_bytes``), under memory pressure (the
    ``MemoryPressure`` condition, PSI stalls), or the kubelet evicted pods / the kernel's
    global OOM killer ran (``KERNEL_OOM_KILL`` critical = scope node). A cgroup OOM kill at a
    container's own limit is no such risk: priority does not move a limit."""
    if diagnosis.verdict.shortage_bytes > 0:
        return True
    return any(
        f.code in _RISK_CODES or (f.code == "KERNEL_OOM_KILL" and f.severity == "critical")
        for f in diagnosis.findings
    )


#: the GPU pods are at risk exactly when the node is (tier 2's word for it)
training_at_risk = node_at_risk


def _group_of(pod: PodInfo) -> str:
    owner = pod.top_owner
    return f"{owner.kind}/{pod.namespace}/{owner.name}" if owner is not None else pod.key


def consumer_group(diagnosis: Diagnosis | None) -> str | None:
    """The owner group (``Kind/ns/name``, or the pod key) the verdict blames for host memory
    or for reaching its own limit: tier 2 never raises its priority (that would protect the
    consumer it should constrain)."""
    if diagnosis is None or diagnosis.verdict.cause not in _HOST_CONSUMER_CAUSES:
        return None
    params = diagnosis.verdict.params
    group = params.get("group")
    if isinstance(group, str) and group:
        return group
    pod = params.get("pod")
    return pod if isinstance(pod, str) and pod else None


def plan_all(
    view: ClusterView,
    diagnosis: Diagnosis,
    *,
    force_unmanaged: bool = False,
    protected_label: str = PROTECTED_LABEL,
    thresholds: Thresholds = DEFAULT,
    holdings: Holdings | None = None,
) -> list[ActionPlan]:
    """Every tier for the node; ``holdings`` (``bot.core.remedies.relief.container_holdings``): what
    each container holds, so caps and their relief are per container."""
    threshold = thresholds.critical_priority_threshold
    tier3 = runbook_plan(view, diagnosis)
    if tier3 is None and not node_at_risk(diagnosis):
        tier3 = _not_at_risk(view, 3)
    if tier3 is None:
        tier3 = plan_tier3(view, diagnosis, thresholds=thresholds, holdings=holdings)
    plans = [
        plan_tier1(
            view,
            diagnosis,
            force_unmanaged=force_unmanaged,
            protected_label=protected_label,
            critical_priority_threshold=threshold,
        ),
        plan_tier2(view, diagnosis, critical_priority_threshold=threshold),
        tier3,
    ]
    return [with_relief(plan, diagnosis, view, holdings) for plan in plans]


def undo_steps(step: Step, before: dict[str, Any]) -> list[Step]:
    """Steps that restore ``before`` (a Change's captured state) after ``step`` ran.

    ``before`` is what the gateway's primitives capture (``bot.kube.draining``, ``.patching``):
    cordon/uncordon ``{"unschedulable": bool}``; annotate_node ``{"annotations": {key: old
    value or None}}`` (only the keys it set: undo removes what it added); set_priority_class
    ``{"priorityClassName": str | None}``; patch_resources ``{"container": name,
    "resources": {"requests": {...}, "limits": {...}}, "env": {NAME: entry | None}}``.
    In the returned params a value of None means "was unset: remove it"; an env entry that
    had more than a literal value (``valueFrom``) is restored whole. Evictions and
    PriorityClass creation have no undo (a recreated pod is a new pod; an unused class is
    harmless).
    """
    kind, ns, name = step.kind, step.namespace, step.name
    if step.verb in ("cordon", "uncordon"):
        was = bool(before.get("unschedulable", step.verb == "uncordon"))
        if was == (step.verb == "cordon"):
            return []
        return [Step(verb="cordon" if was else "uncordon", kind=kind, namespace=ns, name=name)]
    if step.verb == "annotate_node":
        old = dict(before.get("annotations") or {})
        added = step.params.annotations if isinstance(step.params, AnnotateNodeParams) else {}
        restore = {k: old.get(k) for k in sorted(added) if old.get(k) != added[k]}
        if not restore:
            return []
        return [Step(verb="annotate_node", kind=kind, name=name, params={"annotations": restore})]
    if step.verb == "set_priority_class":
        params: dict[str, Any] = {"priority_class": before.get("priorityClassName")}
        return [Step(verb="set_priority_class", kind=kind, namespace=ns, name=name, params=params)]
    p = step.params
    if isinstance(p, PatchResourcesParams | ResizePodParams):
        old_resources = dict(before.get("resources") or {})
        params = {"container": before.get("container", p.container)}
        for section, new in (("requests", p.requests), ("limits", p.limits)):
            old = {str(k): str(v) for k, v in (old_resources.get(section) or {}).items()}
            keys = sorted(set(old) | set(new))
            params[section] = {k: old.get(k) for k in keys}
        if step.verb == "resize_pod":  # in place: the same pod gets its old values back
            return [Step(verb="resize_pod", kind=kind, namespace=ns, name=name, params=params)]
        env: dict[str, Any] = {}
        old_env = dict(before.get("env") or {})
        new_env = p.env if isinstance(p, PatchResourcesParams) else {}
        for var in sorted(set(old_env) | set(new_env)):
            entry = old_env.get(var)
            if entry is None:
                env[var] = None
            elif set(entry) <= {"name", "value"}:
                env[var] = str(entry.get("value", ""))
            else:
                env[var] = dict(entry)
        params["env"] = env
        return [Step(verb="patch_resources", kind=kind, namespace=ns, name=name, params=params)]
    return []
