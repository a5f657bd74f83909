"""Expert invariants over the advice: what must hold for every diagnosis, on any node.

An invariant looks at the evidence (``EvidenceBundle``: what the kernel and the cgroups
report), the cluster view (what the API server knows), the ``Diagnosis`` (verdict, talking
points, plans) and its rendered English report, and says what is wrong with the advice, in
numbers. The arithmetic here is its own, from the raw figures (a container's working set, a
pod's containers, MemTotal): it never calls ``bot.core``'s planning or relief code, so it is
an independent check of it. Used by the invariant tests (corpus and generator), the corpus
table (``gpunode_sandbox.corpus``) and the advice bench (``bench/verdicts.py``).

The invariants (``INVARIANTS``), from issue #20 section 5:

- ``cap_floor``: an available tier-3 memory limit is never below half of what the capped
  container holds in one pod (its working set, the biggest of the owner's pods here), less
  the rounding to whole GiB (whole MiB under 1 GiB);
- ``request_le_limit``: every proposed request is at most the proposed limit (the tier-3
  values, each patch or resize step, the container as it would be after the step, and the
  "request slightly below the limit" talking point);
- ``shares``: every "X (Y% of the node)" and "X of Y (Z%)" in the report, every table line
  with bytes and a percentage of host memory, every share fact beside the bytes fact of the
  same source, and the verdict's shares are consistent with their bytes (rounding allowed);
- ``relief_bounded``: a plan's relief is at most what it can free: tier 1 the evicted pods'
  working sets on this node, tier 3 what the capped container holds above the new limit,
  summed over the pods that take it on this node, tier 2 nothing;
- ``relieves_covers``: a plan (or a sentence) says it relieves the shortage only when the
  node is short and the relief (and the independent bound) covers the shortage;
- ``tier1_spares_gpu``: tier 1 never evicts a pod that uses a GPU, a MIG slice or any
  accelerator resource, a DRA claim, or a member of a gang;
- ``tier2_spares_consumer``: tier 2 never raises the priority of (or restarts) the pod the
  verdict blames for host memory or the group it belongs to;
- ``healthy_no_tier``: on a node that is not short (MemAvailable >= 10% of MemTotal), not
  under memory pressure (PSI, the MemoryPressure condition) and shows no kubelet eviction or
  global OOM kill, tier 1 is not available; and no tier is available when, besides, no
  container is at its limit or OOM-killed and no GPU is full;
- ``no_gpu_words``: on a node without GPUs (none in NVML, none allocatable) the verdict, the
  talking points and the plans say nothing of GPUs, CUDA or DataLoaders.

From issue #24 section 2:

- ``tier1_honours_autoscalers``: tier 1 never evicts a pod annotated
  ``karpenter.sh/do-not-disrupt: "true"`` or ``cluster-autoscaler.kubernetes.io/
  safe-to-evict: "false"``;
- ``partition_respected``: a tier-2/3 plan never names as restarted a StatefulSet pod whose
  ordinal is below the StatefulSet's update partition (the controller does not reach it), and
  tier 3's relief bound counts only the pods the change reaches.
From issue #23 section 2:
- ``tier1_honours_budgets``: taken in the plan's order, no eviction of tier 1 is one the
  eviction API would refuse for a PodDisruptionBudget (none allowed now, or the plan's earlier
  evictions used the allowance up; several budgets; a budget whose status is behind), so its
  relief never counts one; every plainly evictable pod (a controller's, non-critical, not
  asked to stay) that a budget pins now is named in the plan with that budget; and each
  named block is true, with the budget's own counts.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from bot.core.diagnosis.findings import Diagnosis, Fact
from bot.core.model.actions import ActionPlan, PatchResourcesParams, ResizePodParams
from bot.core.model.cluster import BudgetInfo, ClusterView, ContainerInfo, PodInfo
from bot.core.model.evidence import EvidenceBundle
from gpunode_sandbox.kubesim.quantities import to_bytes
from gpunode_sandbox.kubesim.selectors import match_label_selector

GIB = 1024**3
MIB = 1024**2
INVARIANTS: tuple[str, ...] = (
    "cap_floor",
    "request_le_limit",
    "shares",
    "relief_bounded",
    "relieves_covers",
    "tier1_spares_gpu",
    "tier2_spares_consumer",
    "healthy_no_tier",
    "no_gpu_words",
    "tier1_honours_autoscalers",
    "partition_respected",
    "tier1_honours_budgets",
)
#: the node is short below this share of MemTotal available (issue #20's shortage)
SHORT_SHARE = 0.10
#: PSI "some" avg10 (percent) above which the node is under memory pressure
PRESSURE_SOME_AVG10 = 5.0
#: a container at or above this share of its limit is "at its limit"
AT_LIMIT_SHARE = 0.95
#: a GPU at or above this share of its memory is full
GPU_FULL_SHARE = 0.95
#: labels and annotations every gang controller puts on its members (own list, not bot.core's)
GANG_LABELS = (
    "training.kubeflow.org/job-name",
    "jobset.sigs.k8s.io/jobset-name",
    "leaderworkerset.sigs.k8s.io/name",
    "ray.io/cluster",
    "volcano.sh/job-name",
    "scheduling.x-k8s.io/pod-group",
    "kueue.x-k8s.io/pod-group-name",
    "sparkoperator.k8s.io/app-name",
    "pod-group.scheduling.sigs.k8s.io",
)
GANG_ANNOTATIONS = ("scheduling.k8s.io/group-name", "scheduling.volcano.sh/group-name")
GANG_GROUPS = (
    "kubeflow.org",
    "trainer.kubeflow.org",
    "jobset.x-k8s.io",
    "leaderworkerset.x-k8s.io",
    "ray.io",
    "batch.volcano.sh",
    "scheduling.volcano.sh",
    "scheduling.x-k8s.io",
    "sparkoperator.k8s.io",
)
ACCELERATOR_PREFIXES = ("nvidia.com/", "amd.com/gpu", "gpu.intel.com/", "habana.ai/")
GPU_WORDS = re.compile(r"\bGPUs?\b|\bCUDA\b|\bDataLoader\b|\bMIG\b|\bNVML\b", re.IGNORECASE)
#: report sections that carry the advice (the rest is the evidence itself)
ADVICE_SECTIONS = ("VERDICT", "TALKING POINTS", "PLANS")


@dataclass(frozen=True)
class Violation:
    invariant: str
    detail: str

    def __str__(self) -> str:
        return f"{self.invariant}: {self.detail}"


# --- the evidence, read independently -----------------------------------------------------


def _gib(b: float) -> str:
    return f"{b / GIB:.1f} GiB"


def _container_ws(bundle: EvidenceBundle) -> dict[tuple[str, str], int]:
    """(pod uid, container id) -> working set, as the kubelet measures it (usage less
    inactive file when no working set is reported)."""
    out: dict[tuple[str, str], int] = {}
    for c in bundle.containers:
        if c.pod_uid is None or c.container_id is None:
            continue
        ws = c.working_set_bytes
        if ws is None:
            ws = max(0, (c.usage_bytes or 0) - (c.inactive_file_bytes or 0))
        out[(c.pod_uid, c.container_id)] = ws
    return out


def _pod_ws(bundle: EvidenceBundle) -> dict[str, int]:
    out: dict[str, int] = {}
    for (uid, _), ws in _container_ws(bundle).items():
        out[uid] = out.get(uid, 0) + ws
    return out


def _mem_total(bundle: EvidenceBundle) -> int:
    return bundle.meminfo.mem_total_bytes if bundle.meminfo is not None else 0


def _here(view: ClusterView) -> dict[str, PodInfo]:
    node = view.node.name
    return {p.key: p for p in view.pods if p.node_name in (None, node)}


def holding(bundle: EvidenceBundle, pod: PodInfo, container: str) -> int | None:
    """What container ``container`` of ``pod`` holds (its working set), None if unseen."""
    info = next((c for c in pod.containers if c.name == container), None)
    if info is None or info.container_id is None:
        return None
    return _container_ws(bundle).get((pod.uid, info.container_id))


def is_protected_kind(pod: PodInfo) -> str | None:
    """Why tier 1 must not evict ``pod`` (GPU / MIG / accelerator / DRA / gang), or None."""
    names = set(pod.accelerators)
    for c in pod.containers:
        names |= set(c.requests) | set(c.limits)
    if pod.gpu_request or any(n.startswith(ACCELERATOR_PREFIXES) for n in names):
        return "accelerator"
    if pod.resource_claims:
        return "dra"
    if any(k in pod.labels for k in GANG_LABELS) or any(
        k in pod.annotations for k in GANG_ANNOTATIONS
    ):
        return "gang"
    if any(o.api_version.split("/")[0] in GANG_GROUPS for o in pod.owners if "/" in o.api_version):
        return "gang"
    return None


def node_has_gpus(bundle: EvidenceBundle, view: ClusterView | None) -> bool:
    if bundle.gpus:
        return True
    if view is None:
        return False
    res = {**view.node.capacity, **view.node.allocatable}
    return any(k.startswith(ACCELERATOR_PREFIXES) and v not in ("0", "") for k, v in res.items())


def node_trouble(bundle: EvidenceBundle, view: ClusterView | None) -> list[str]:
    """Why the node needs a node-wide action (short, pressure, eviction, global OOM); []."""
    why: list[str] = []
    mi = bundle.meminfo
    avail = mi.mem_available_bytes if mi is not None else None
    if mi is not None and avail is not None and avail < SHORT_SHARE * mi.mem_total_bytes:
        why.append(f"MemAvailable {_gib(avail)} < 10% of {_gib(mi.mem_total_bytes)}")
    p = bundle.pressure
    if p is not None and p.some is not None and p.some.avg10 >= PRESSURE_SOME_AVG10:
        why.append(f"PSI some avg10 {p.some.avg10:.1f}%")
    if view is not None:
        if any(c.type == "MemoryPressure" and c.status == "True" for c in view.node.conditions):
            why.append("MemoryPressure condition")
        reasons = {"Evicted", "SystemOOM", "EvictionThresholdMet", "OOMKilling", "Preempting"}
        why += [f"event {e.reason}" for e in view.events if e.reason in reasons]
    if bundle.kernel_log is not None:
        why += [
            f"global OOM kill of {k.comm}" for k in bundle.kernel_log.oom_kills if k.scope == "node"
        ]
    return why


def local_trouble(bundle: EvidenceBundle) -> list[str]:
    """A container at its own limit or OOM-killed, a full GPU, a GPU process of no pod."""
    why: list[str] = []
    for c in bundle.containers:
        ws = c.working_set_bytes or c.usage_bytes or 0
        if c.limit_bytes and ws >= AT_LIMIT_SHARE * c.limit_bytes:
            why.append(f"container {c.container_id} at its limit")
        if c.oom_kill_events:
            why.append(f"container {c.container_id} OOM-killed")
    for g in bundle.gpus:
        if (
            g.memory_total_bytes
            and (g.memory_used_bytes or 0) >= GPU_FULL_SHARE * g.memory_total_bytes
        ):
            why.append(f"GPU {g.index} full")
    if any(gp.pod_uid is None for gp in bundle.gpu_processes):
        why.append("GPU process of no pod")
    return why


# --- the invariants -----------------------------------------------------------------------


def below_partition(view: ClusterView, pod: PodInfo) -> bool:
    """A StatefulSet pod whose ordinal (``<name>-<n>``) is below its partition: a rolling
    update of the template does not reach it (StatefulSet controller, upstream)."""
    owner = pod.owners[-1] if pod.owners else None
    if owner is None or owner.kind != "StatefulSet":
        return False
    w = next(
        (
            w
            for w in view.workloads
            if (w.kind, w.namespace, w.name) == ("StatefulSet", pod.namespace, owner.name)
        ),
        None,
    )
    if w is None or not w.partition or w.strategy == "OnDelete":
        return False
    m = re.fullmatch(re.escape(owner.name) + r"-(\d+)", pod.name)
    return m is not None and int(m.group(1)) < w.partition


def _tier3_pods(plan: ActionPlan, view: ClusterView) -> list[PodInfo]:
    """The pods on this node that take the tier-3 values (restarted or resized; a pod below
    its StatefulSet's partition is not reached by a template patch)."""
    here = _here(view)
    keys = set(plan.restarts) | set(plan.blast_radius)
    resized = set()
    for s in plan.steps:
        if s.verb == "resize_pod" and s.namespace is not None:
            resized.add(f"{s.namespace}/{s.name}")
    keys |= resized
    return [
        here[k]
        for k in sorted(keys)
        if k in here and (k in resized or not below_partition(view, here[k]))
    ]


def check_cap_floor(bundle: EvidenceBundle, view: ClusterView, d: Diagnosis) -> list[Violation]:
    out = []
    for plan in d.plans:
        if plan.tier != 3 or not plan.available or plan.values is None:
            continue
        v = plan.values
        held = [h for p in _tier3_pods(plan, view) if (h := holding(bundle, p, v.container))]
        most = max(held, default=v.current_working_set_bytes or 0)
        if not most:
            continue
        half = most // 2
        slack = GIB if half >= GIB else MIB
        if v.memory_limit_bytes < half - slack:
            out.append(
                Violation(
                    "cap_floor",
                    f"tier 3 limit {v.memory_limit} ({v.memory_limit_bytes} B) for container "
                    f"{v.container} of {plan.target} is below half of the {_gib(most)} it holds "
                    f"in one pod ({_gib(half)})",
                )
            )
    return out


def _le(req: str | None, lim: str | None) -> bool:
    if req is None or lim is None:
        return True
    return to_bytes(req) <= to_bytes(lim)


def check_request_le_limit(view: ClusterView, d: Diagnosis) -> list[Violation]:
    out = []
    pods = {p.key: p for p in view.pods}
    for plan in d.plans:
        if not plan.available:
            continue
        v = plan.values
        if v is not None:
            if not _le(v.memory_request, v.memory_limit):
                out.append(
                    Violation(
                        "request_le_limit",
                        f"tier {plan.tier} memory request {v.memory_request} > limit "
                        f"{v.memory_limit}",
                    )
                )
            if not _le(v.cpu_request, v.cpu_limit):
                out.append(
                    Violation(
                        "request_le_limit",
                        f"tier {plan.tier} cpu request {v.cpu_request} > limit {v.cpu_limit}",
                    )
                )
        for s in plan.steps:
            p = s.params
            if not isinstance(p, PatchResourcesParams | ResizePodParams):
                continue
            before = _before(s.kind, s.namespace, s.name, p.container, view, pods)
            for res in set(p.requests) | set(p.limits):
                req = p.requests.get(res)
                lim = p.limits.get(res)
                if before is not None:  # the container as it would be after the step
                    req = req if res in p.requests else before.requests.get(res)
                    lim = lim if res in p.limits else before.limits.get(res)
                if not _le(req, lim):
                    out.append(
                        Violation(
                            "request_le_limit",
                            f"tier {plan.tier} {s.verb} {s.kind}/{s.namespace}/{s.name} "
                            f"container {p.container}: {res} request {req} > limit {lim}",
                        )
                    )
    for tp in d.talking_points:
        sug, cap = tp.params.get("suggested_request_bytes"), tp.params.get("limit_bytes")
        if isinstance(sug, int | float) and isinstance(cap, int | float) and cap and sug > cap:
            out.append(
                Violation(
                    "request_le_limit",
                    f"talking point {tp.key} suggests request {_gib(sug)} > limit {_gib(cap)}",
                )
            )
    return out


def _before(
    kind: str,
    ns: str | None,
    name: str,
    container: str,
    view: ClusterView,
    pods: dict[str, PodInfo],
) -> ContainerInfo | None:
    """The container's current spec in a pod of that object (a controller's pod here)."""
    if kind == "Pod":
        pod = pods.get(f"{ns}/{name}")
        candidates = [pod] if pod is not None else []
    else:
        candidates = [
            p
            for p in view.pods
            if p.namespace == ns
            and p.top_owner is not None
            and (p.top_owner.kind, p.top_owner.name) == (kind, name)
        ]
    for pod in candidates:
        info = next((c for c in pod.containers if c.name == container), None)
        if info is not None:
            return info
    return None


def relief_bound(plan: ActionPlan, bundle: EvidenceBundle, view: ClusterView) -> int:
    """What the plan can free on this node at most, from the evidence (see the docstring)."""
    if not plan.available:
        return 0
    if plan.tier == 1:
        ws = _pod_ws(bundle)
        here = _here(view)
        return sum(ws.get(here[k].uid, 0) for k in plan.blast_radius if k in here)
    if plan.tier == 3 and plan.values is not None:
        v = plan.values
        total = 0
        for p in _tier3_pods(plan, view):
            h = holding(bundle, p, v.container)
            total += max(0, (h or 0) - v.memory_limit_bytes)
        return total
    return 0


def check_relief(bundle: EvidenceBundle, view: ClusterView, d: Diagnosis) -> list[Violation]:
    out = []
    for plan in d.plans:
        bound = relief_bound(plan, bundle, view)
        # 1% + 64 MiB: the ledger's measure (anon + active file) vs the working set
        if plan.relief_bytes > bound * 1.01 + 64 * MIB:
            what = plan.values.container if plan.values is not None else ""
            out.append(
                Violation(
                    "relief_bounded",
                    f"tier {plan.tier} ({plan.target}{' container ' + what if what else ''}) "
                    f"claims {_gib(plan.relief_bytes)} freed; it can free at most {_gib(bound)}",
                )
            )
        if plan.relieves and not (
            plan.shortage_bytes > 0
            and plan.relief_bytes >= plan.shortage_bytes
            and bound * 1.01 + 64 * MIB >= plan.shortage_bytes
        ):
            out.append(
                Violation(
                    "relieves_covers",
                    f"tier {plan.tier} says it relieves a {_gib(plan.shortage_bytes)} shortage "
                    f"with {_gib(plan.relief_bytes)} (at most {_gib(bound)} from the evidence)",
                )
            )
    return out


def check_tier1(view: ClusterView, d: Diagnosis) -> list[Violation]:
    out = []
    pods = _here(view)
    for plan in d.plans:
        if plan.tier != 1 or not plan.available:
            continue
        evicted = set(plan.blast_radius) | {
            f"{s.namespace}/{s.name}" for s in plan.steps if s.verb == "evict"
        }
        for key in sorted(evicted):
            pod = pods.get(key)
            why = is_protected_kind(pod) if pod is not None else None
            if why is not None:
                out.append(Violation("tier1_spares_gpu", f"tier 1 evicts {key} ({why} pod)"))
    return out


_ASKS = (
    ("karpenter.sh/do-not-disrupt", "true"),
    ("cluster-autoscaler.kubernetes.io/safe-to-evict", "false"),
)


def check_autoscaler_asks(view: ClusterView, d: Diagnosis) -> list[Violation]:
    out = []
    pods = _here(view)
    for plan in d.plans:
        if plan.tier != 1 or not plan.available:
            continue
        evicted = set(plan.blast_radius) | {
            f"{s.namespace}/{s.name}" for s in plan.steps if s.verb == "evict"
        }
        for key in sorted(evicted):
            pod = pods.get(key)
            for name, value in _ASKS:
                if pod is not None and pod.annotations.get(name) == value:
                    out.append(
                        Violation(
                            "tier1_honours_autoscalers",
                            f"tier 1 evicts {key}, annotated {name}: {value!r}",
                        )
                    )
    return out


#: priority at or above which a pod is critical (the product's default threshold, restated)
CRITICAL_PRIORITY = 1_000_000
_STAY_ASKED = (*_ASKS, ("gpunode.io/protected", "true"))


def _selects(b: BudgetInfo, pod: PodInfo) -> bool:
    """The budget selects the pod, judged by the stand-in's own selector code."""
    if b.namespace != pod.namespace or b.selector is None:
        return False
    sel = {
        "matchLabels": dict(b.selector.match_labels),
        "matchExpressions": [
            {"key": e.key, "operator": e.operator, "values": list(e.values)}
            for e in b.selector.match_expressions
        ],
    }
    return bool(match_label_selector(sel, pod.labels))


def _plainly_evictable(pod: PodInfo, view: ClusterView) -> bool:
    """A controller's running pod that nothing marks critical or asked to keep."""
    return (
        pod.phase == "Running"
        and not pod.deleting
        and bool(pod.owners)
        and not pod.is_daemonset
        and not pod.is_mirror
        and not any(o.kind == "DaemonSet" for o in pod.owners)
        and is_protected_kind(pod) is None
        and pod.priority < CRITICAL_PRIORITY
        and not (pod.priority_class_name or "").startswith("system-")
        and not any(pod.labels.get(k, pod.annotations.get(k)) == v for k, v in _STAY_ASKED)
        and pod.labels.get("gpunode.io/role") != "diagnostic"
        and pod.namespace != view.bot_namespace
    )


def _exempt(pod: PodInfo, b: BudgetInfo) -> bool:
    """An unready pod the eviction API lets go past its budget."""
    return not pod.ready and (
        b.unhealthy_pod_eviction_policy == "AlwaysAllow"
        or (b.desired_healthy > 0 and b.current_healthy >= b.desired_healthy)
    )


def check_budgets(view: ClusterView, d: Diagnosis) -> list[Violation]:
    out: list[Violation] = []
    budgets = view.budgets or []
    if not budgets:
        return out
    pods = _here(view)
    for plan in d.plans:
        if plan.tier != 1 or not plan.available:
            continue
        left = {(b.namespace, b.name): b.disruptions_allowed for b in budgets}
        evicted = [f"{s.namespace}/{s.name}" for s in plan.steps if s.verb == "evict"]
        for key in evicted:
            pod = pods.get(key)
            if pod is None or pod.phase != "Running" or pod.deleting:
                continue
            mine = [b for b in budgets if _selects(b, pod)]
            if len(mine) > 1:
                out.append(
                    Violation(
                        "tier1_honours_budgets",
                        f"tier 1 evicts {key}, which {len(mine)} budgets select (refused)",
                    )
                )
            elif mine and not mine[0].current:
                out.append(
                    Violation(
                        "tier1_honours_budgets",
                        f"tier 1 evicts {key}, whose budget {mine[0].name} is still processed",
                    )
                )
            elif mine and not _exempt(pod, mine[0]):
                b = mine[0]
                if left[(b.namespace, b.name)] <= 0:
                    out.append(
                        Violation(
                            "tier1_honours_budgets",
                            f"tier 1 evicts {key}, which budget {b.name} refuses (needs "
                            f"{b.desired_healthy} healthy, has {b.current_healthy}; its "
                            f"relief counts it)",
                        )
                    )
                left[(b.namespace, b.name)] -= 1
        named = {p.pod: p for p in plan.protected if p.refusal is not None}
        for key, pod in sorted(pods.items()):
            if key in evicted or not _plainly_evictable(pod, view):
                continue
            mine = [b for b in budgets if _selects(b, pod)]
            one = mine[0] if len(mine) == 1 else None
            refused = len(mine) > 1 or (
                one is not None
                and (not one.current or (one.disruptions_allowed <= 0 and not _exempt(pod, one)))
            )
            if refused and key not in named:
                out.append(
                    Violation(
                        "tier1_honours_budgets",
                        f"{key} is pinned by budget {', '.join(b.name for b in mine)} but the "
                        "plan does not name it",
                    )
                )
        for key, p in named.items():
            pod = pods.get(key)
            mine = [b for b in budgets if pod is not None and _selects(b, pod)]
            if not mine or any(b.name not in (p.budget or "") for b in mine):
                out.append(
                    Violation("tier1_honours_budgets", f"{key} named as pinned by {p.budget}")
                )
            elif p.refusal == "no_disruption_allowed" and pod is not None:
                b = mine[0]
                spent = sum(1 for k in evicted if k in pods and _selects(b, pods[k]))
                if (b.desired_healthy, b.current_healthy) != (p.needs, p.has) or (
                    b.disruptions_allowed - spent > 0
                ):
                    out.append(
                        Violation(
                            "tier1_honours_budgets",
                            f"{key} named as refused by {b.name} (needs {p.needs}, has "
                            f"{p.has}); the budget says needs {b.desired_healthy}, has "
                            f"{b.current_healthy}, {b.disruptions_allowed - spent} allowed",
                        )
                    )
    return out


def check_partition(view: ClusterView, d: Diagnosis) -> list[Violation]:
    out = []
    pods = _here(view)
    for plan in d.plans:
        if plan.tier not in (2, 3) or not plan.available:
            continue
        for key in plan.restarts:
            pod = pods.get(key)
            if pod is not None and below_partition(view, pod):
                out.append(
                    Violation(
                        "partition_respected",
                        f"tier {plan.tier} restarts {key}, below its StatefulSet's partition",
                    )
                )
    return out


def _consumer(d: Diagnosis, view: ClusterView) -> tuple[str, str | None] | None:
    """(pod key, its group Kind/ns/name) the verdict blames for host memory, or None."""
    v = d.verdict
    if v.cause not in ("host_memory_workload", "shmem", "container_limit"):
        return None
    key = v.params.get("pod")
    if not isinstance(key, str):
        key = v.subject if v.subject and "/" in v.subject else None
    if key is None:
        return None
    pod = next((p for p in view.pods if p.key == key), None)
    owner = pod.top_owner if pod is not None else None
    group = f"{owner.kind}/{pod.namespace}/{owner.name}" if owner and pod else None
    return key, group


def check_tier2(view: ClusterView, d: Diagnosis) -> list[Violation]:
    who = _consumer(d, view)
    if who is None:
        return []
    key, group = who
    out = []
    for plan in d.plans:
        if plan.tier != 2 or not plan.available:
            continue
        raised = {
            f"{s.kind}/{s.namespace}/{s.name}" for s in plan.steps if s.verb == "set_priority_class"
        }
        if key in plan.restarts or key in plan.blast_radius or (group and group in raised):
            out.append(
                Violation(
                    "tier2_spares_consumer",
                    f"tier 2 raises the priority of the consumer {key} ({group or 'no owner'})",
                )
            )
    return out


def check_healthy(bundle: EvidenceBundle, view: ClusterView, d: Diagnosis) -> list[Violation]:
    if node_trouble(bundle, view):
        return []
    out = []
    tier1 = next((p for p in d.plans if p.tier == 1 and p.available), None)
    if tier1 is not None:
        out.append(
            Violation(
                "healthy_no_tier",
                f"tier 1 (evict {len(tier1.blast_radius)} pods) available on a node that is "
                "not short, not under pressure, with no eviction or global OOM",
            )
        )
    if d.verdict.cause == "healthy" or not local_trouble(bundle):
        out += [
            Violation("healthy_no_tier", f"tier {p.tier} available on a healthy node")
            for p in d.plans
            if p.available and p.tier != 1
        ]
    return out


def advice_sections(report: str) -> str:
    """The verdict, talking points and plans of an English text report."""
    keep, on = [], False
    for line in report.splitlines():
        if line and not line.startswith(" ") and line.split("  ")[0].isupper():
            on = line.startswith(ADVICE_SECTIONS)
        if on:
            keep.append(line)
    return "\n".join(keep)


def check_gpu_words(bundle: EvidenceBundle, view: ClusterView, report: str) -> list[Violation]:
    if node_has_gpus(bundle, view):
        return []
    out = []
    for line in advice_sections(report).splitlines():
        m = GPU_WORDS.search(line)
        if m:
            out.append(
                Violation("no_gpu_words", f"{m.group(0)!r} on a node without GPUs: {line.strip()}")
            )
    return out


# --- shares -------------------------------------------------------------------------------

_UNIT = {"B": 1, "KiB": 1024, "MiB": MIB, "GiB": GIB, "TiB": 1024**4, "PiB": 1024**5}
_BYTES = r"(\d+(?:\.\d+)?) (B|KiB|MiB|GiB|TiB|PiB)"
_PCT = r"(\d+(?:\.\d+)?)%"
_OF_NODE = re.compile(
    _BYTES + r"[^()%\d]{0,30}\(" + _PCT + r" of (?:the node|host memory|the node's memory|RAM)\)"
)
_X_OF_Y = re.compile(
    _BYTES + r" of (?:its |the )?" + _BYTES + r"(?: [a-z][a-z ]{0,20})? \(" + _PCT + r"\)"
)
_ROW = re.compile(r"^\s+(?:\S\s+[a-z][a-z ]*?\s+)?" + _BYTES + r"\s+" + _PCT + r"\s+\S")


def _bytes_range(num: str, unit: str) -> tuple[float, float]:
    scale = _UNIT[unit]
    half = 0.5 if unit == "B" else 0.05
    v = float(num)
    return max(0.0, (v - half)) * scale, (v + half) * scale


def _pct_range(text: str) -> tuple[float, float]:
    v = float(text)
    half = 0.05 if "." in text else 0.5
    return max(0.0, v - half), v + half


#: percentage points allowed beyond the rounding: two measures of one holding (working set,
#: anon + active file) may differ by a hair; a group's share beside a pod's bytes does not
SLACK_PP = 0.25


def _consistent(part: tuple[float, float], whole: tuple[float, float], pct: str) -> bool:
    low = 100 * part[0] / whole[1] if whole[1] else 0.0
    high = 100 * part[1] / whole[0] if whole[0] else float("inf")
    plow, phigh = _pct_range(pct)
    return low <= phigh + SLACK_PP and plow <= high + SLACK_PP


def check_share_text(bundle: EvidenceBundle, report: str) -> list[Violation]:
    total = _mem_total(bundle)
    if not total:
        return []
    node = (float(total), float(total))
    out = []
    section = ""
    for line in report.splitlines():
        if line and not line.startswith(" "):
            section = line.split("  ")[0]
        for m in _OF_NODE.finditer(line):
            if not _consistent(_bytes_range(m[1], m[2]), node, m[3]):
                out.append(
                    Violation(
                        "shares",
                        f"'{m[0]}': {m[1]} {m[2]} is {100 * float(m[1]) * _UNIT[m[2]] / total:.1f}%"
                        f" of MemTotal {_gib(total)}, not {m[3]}%",
                    )
                )
        for m in _X_OF_Y.finditer(line):
            whole = _bytes_range(m[3], m[4])
            if not _consistent(_bytes_range(m[1], m[2]), whole, m[5]):
                out.append(Violation("shares", f"'{m[0]}': the percentage is not the ratio"))
        if section.startswith(("TOP PODS", "KERNEL AND SYSTEM", "HOST MEMORY")):
            row = _ROW.match(line)
            if row and not _consistent(_bytes_range(row[1], row[2]), node, row[3]):
                out.append(
                    Violation(
                        "shares",
                        f"row '{line.strip()}': {row[1]} {row[2]} is not {row[3]}% of "
                        f"MemTotal {_gib(total)}",
                    )
                )
    return out


_SHARE_LABEL = re.compile(r"of (?:host memory|the node|RAM)\b")


def _fact_lists(d: Diagnosis) -> Iterable[tuple[str, list[Fact]]]:
    yield "verdict", d.verdict.facts
    for f in d.findings:
        yield f"finding {f.code} {f.subject}", f.facts
    for tp in d.talking_points:
        yield f"talking point {tp.key}", tp.facts


def check_share_facts(bundle: EvidenceBundle, d: Diagnosis) -> list[Violation]:
    total = _mem_total(bundle)
    if not total:
        return []
    out = []
    for where, facts in _fact_lists(d):
        for f in facts:
            if f.unit not in ("percent", "ratio") or not isinstance(f.value, int | float):
                continue
            if not _SHARE_LABEL.search(f.label) or "available" in f.label:
                continue
            pct = float(f.value) * (100 if f.unit == "ratio" else 1)
            beside = [
                float(b.value)
                for b in facts
                if b.unit == "bytes" and b.source == f.source and isinstance(b.value, int | float)
            ]
            if beside and not any(abs(100 * b / total - pct) <= 0.5 for b in beside):
                out.append(
                    Violation(
                        "shares",
                        f"{where}: fact '{f.label}' = {pct:.1f}% but its bytes "
                        f"({', '.join(_gib(b) for b in beside)}) are "
                        f"{', '.join(f'{100 * b / total:.1f}%' for b in beside)} of MemTotal",
                    )
                )
    v = d.verdict
    host = not v.cause.startswith("gpu_") and v.cause != "container_limit"
    if host and v.primary_bytes and abs(v.share - v.primary_bytes / total) > 0.005:
        out.append(
            Violation(
                "shares",
                f"verdict share {v.share:.3f} but its {_gib(v.primary_bytes)} are "
                f"{v.primary_bytes / total:.3f} of MemTotal",
            )
        )
    for c in v.contributing:
        if c.cause.startswith("gpu_") or c.cause == "container_limit":
            continue  # a GPU's share is of its device; a container at its limit, of the limit
        if abs(c.share - c.bytes / total) > 0.005:
            out.append(
                Violation(
                    "shares",
                    f"contributing {c.subject} share {c.share:.3f} but {_gib(c.bytes)} is "
                    f"{c.bytes / total:.3f} of MemTotal",
                )
            )
    return out


_RELIEVES_TEXT = (
    re.compile(
        r"Frees about " + _BYTES + r"; the node is short of about " + _BYTES + r": this relieves it"
    ),
    re.compile(
        r"frees about "
        + _BYTES
        + r" of the "
        + _BYTES
        + r" the node is short: enough to relieve it"
    ),
)


def check_relieves_text(report: str) -> list[Violation]:
    """Every sentence that says a plan relieves the shortage frees at least the shortage."""
    out = []
    for pattern in _RELIEVES_TEXT:
        for m in pattern.finditer(report):
            freed, short = _bytes_range(m[1], m[2]), _bytes_range(m[3], m[4])
            if freed[1] < short[0]:
                out.append(
                    Violation("relieves_covers", f"'{m[0]}': it frees less than the shortage")
                )
    return out


# --- all of them --------------------------------------------------------------------------


def render_en(d: Diagnosis, bundle: EvidenceBundle) -> str:
    from bot.render.text import render_report_text

    return render_report_text(d, bundle, locale="en", top_pods=10)


def check(
    bundle: EvidenceBundle,
    view: ClusterView,
    d: Diagnosis,
    *,
    report: str | None = None,
) -> list[Violation]:
    """Every invariant's violations (empty: the advice holds). ``report``: the English text
    report of ``d`` (rendered here when not given)."""
    text = report if report is not None else render_en(d, bundle)
    return [
        *check_cap_floor(bundle, view, d),
        *check_request_le_limit(view, d),
        *check_share_text(bundle, text),
        *check_share_facts(bundle, d),
        *check_relief(bundle, view, d),
        *check_relieves_text(text),
        *check_tier1(view, d),
        *check_tier2(view, d),
        *check_healthy(bundle, view, d),
        *check_gpu_words(bundle, view, text),
        *check_autoscaler_asks(view, d),
        *check_partition(view, d),
        *check_budgets(view, d),
    ]


def by_invariant(violations: Iterable[Violation]) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for v in violations:
        out.setdefault(v.invariant, []).append(v.detail)
    return out
