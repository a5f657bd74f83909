"""What each plan frees against the node's shortage, and manual runbooks. Pure: no I/O.

``with_relief(plan, diagnosis)`` fills ``relief_bytes``, ``shortage_bytes`` and ``relieves``:

- tier 1 (cordon + evict): the evicted pods' working sets (the kubelet's measure, which their
  eviction gives back: their memory and the kernel memory charged to them);
- tier 2 (priority class): nothing; it protects the training from eviction, it frees no memory;
- tier 3 (caps): for each of the owner's pods on this node, what the *capped container*
  holds above the new limit (a cap below the working set frees the difference once the pod
  restarts): a leaking sidecar's cap frees at most what the sidecar holds, never its pod's
  training memory. Pods on other nodes free nothing here.

``relieves`` is True only when the node is short and the relief covers the shortage: a plan
that cannot relieve it says so (templates: "not the fix") rather than being offered as one.

``runbook_plan``: the consumer is outside Kubernetes (a process of a systemd unit, or a GPU
process of no pod). No API call can free it, so the tier-3 plan has no steps and is not
available; it carries ``runbook`` steps (which unit, which command) shown as text. What the
restart risks depends on the unit (``bot.core.remedies.runbooks``, one table): the plan carries that
kind's warning (``runbook_<kind>``), and where the restart can take the node NotReady
(kubelet, container runtime) the steps cordon the node first and uncordon it once Ready.
"""

from __future__ import annotations

from bot.core.diagnosis.attribution import Attribution
from bot.core.diagnosis.findings import Diagnosis
from bot.core.model.actions import ActionPlan, RunbookStep
from bot.core.model.cluster import ClusterView
from bot.core.model.plans import make_plan
from bot.core.remedies.caps import Holdings, container_holds
from bot.core.remedies.runbooks import runbook_for


def container_holdings(attr: Attribution) -> dict[str, dict[str, int]]:
    """What each container holds, per pod (key -> container name -> bytes): its working set
    (usage less inactive file, the kubelet's figure: it counts the container's shmem and
    active page cache, which its restart frees too); anon + active file where the working set
    is unknown."""
    out: dict[str, dict[str, int]] = {}
    for usage in attr.pods.values():
        if usage.pod is None:
            continue
        for c in usage.containers:
            if c.info is None:
                continue
            held = c.mem.working_set_bytes
            if held is None:
                held = (c.mem.anon_bytes or 0) + (c.active_file_bytes or 0)
            out.setdefault(usage.key, {})[c.name] = held
    return out


def _pod_bytes(diagnosis: Diagnosis) -> dict[str, int]:
    return {
        e.pod_key: e.figure
        for e in diagnosis.ledger.entries
        if e.category == "pod" and e.pod_key is not None
    }


def relief_bytes(
    plan: ActionPlan,
    diagnosis: Diagnosis,
    view: ClusterView | None = None,
    holdings: Holdings | None = None,
) -> int:
    if not plan.available:
        return 0
    if plan.tier == 1:
        held = _pod_bytes(diagnosis)
        return sum(held.get(key, 0) for key in plan.blast_radius)
    if plan.tier == 3 and plan.values is not None:
        limit = plan.values.memory_limit_bytes
        here = {p.key for p in view.pods} if view is not None else set(plan.restarts)
        pods = [key for key in plan.blast_radius if key in here]
        ws = plan.values.current_working_set_bytes or 0
        holds = container_holds(diagnosis, pods, plan.values.container, holdings, ws)
        return sum(max(0, h - limit) for h in holds.values())
    return 0


def with_relief(
    plan: ActionPlan,
    diagnosis: Diagnosis,
    view: ClusterView | None = None,
    holdings: Holdings | None = None,
) -> ActionPlan:
    short = diagnosis.verdict.shortage_bytes
    relief = relief_bytes(plan, diagnosis, view, holdings)
    return plan.model_copy(
        update={
            "relief_bytes": relief,
            "shortage_bytes": short,
            "relieves": short > 0 and relief >= short,
        }
    )


def _cordoned(steps: list[RunbookStep], unit: str, node: str) -> list[RunbookStep]:
    """``steps`` between a cordon of ``node`` and its uncordon once Ready again."""
    return [
        RunbookStep(unit=unit, command=f"kubectl cordon {node}", purpose="cordon"),
        *steps,
        RunbookStep(
            unit=unit,
            command=f"kubectl wait --for=condition=Ready node/{node} --timeout=5m "
            f"&& kubectl uncordon {node}",
            purpose="uncordon",
        ),
    ]


def runbook_steps(diagnosis: Diagnosis, node: str = "NODE") -> list[RunbookStep]:
    """Manual steps for a consumer outside Kubernetes; [] for any other verdict."""
    v = diagnosis.verdict
    pid = v.params.get("pid")
    if v.cause == "system_process":
        unit = str(v.params.get("systemd_unit") or "")
        if unit:
            book = runbook_for(unit)
            steps = [
                RunbookStep(unit=unit, command=f"systemctl status {unit}", purpose="inspect"),
                RunbookStep(
                    unit=unit, command=f"journalctl -u {unit} --since -1h", purpose="inspect"
                ),
            ]
            if book.kind == "other":
                steps.append(
                    RunbookStep(
                        unit=unit,
                        command=f"systemctl list-dependencies --reverse {unit}",
                        purpose="inspect",
                    )
                )
            steps.append(
                RunbookStep(unit=unit, command=f"systemctl restart {unit}", purpose="restart")
            )
            return _cordoned(steps, unit, node) if book.cordon_first else steps
        name = v.subject or f"pid {pid}"
        steps = [
            RunbookStep(unit=name, command=f"ps -o pid,rss,etime,cmd -p {pid}", purpose="inspect"),
            RunbookStep(unit=name, command=f"kill -TERM {pid}", purpose="kill"),
        ]
        return _cordoned(steps, name, node) if runbook_for(name).cordon_first else steps
    if v.cause == "gpu_orphan" and pid is not None:
        name = f"{v.params.get('command', '')}[{pid}]"
        return [
            RunbookStep(
                unit=name,
                command="nvidia-smi --query-compute-apps=pid,process_name,used_memory --format=csv",
                purpose="inspect",
            ),
            RunbookStep(unit=name, command=f"cat /proc/{pid}/cgroup", purpose="inspect"),
            RunbookStep(unit=name, command=f"kill -TERM {pid}", purpose="kill"),
        ]
    return []


def runbook_plan(view: ClusterView, diagnosis: Diagnosis) -> ActionPlan | None:
    steps = runbook_steps(diagnosis, view.node.name)
    if not steps:
        return None
    warnings = ["outside_kubernetes_manual_step"]
    if diagnosis.verdict.cause == "system_process":
        warnings.append(runbook_for(steps[0].unit).warning)
    return make_plan(
        view.node.name,
        3,
        [],
        target=steps[0].unit,
        available=False,
        warnings=warnings,
        runbook=steps,
        shortage_bytes=diagnosis.verdict.shortage_bytes,
    )
