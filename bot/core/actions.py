"""Action plans: effects described as data before anything touches the cluster.

``plan_tier1/2/3`` (in ``bot.core.planning``) build these from a Diagnosis' inputs; policy
decides on them; the executor in ``bot.kube`` maps each ``Step`` onto one remedy primitive
(``bot.services.ports.KubePort``), dry run first. ``undo`` is the list of steps that
restores the previous state, filled from the captured before-state.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

Tier = Literal[1, 2, 3]

#: controllers whose pod template gpunode patches (tier 2 and 3). Others are refused with a
#: warning: a Job's template is immutable, a ReplicaSet belongs to its Deployment, and a
#: DaemonSet runs on every node (capping it is not a node-local mitigation). The ClusterRole
#: grants ``patch`` on exactly these (deploy/base/clusterrole.yaml; a test keeps them equal).
PATCHABLE_KINDS: tuple[str, ...] = ("Deployment", "StatefulSet", "DaemonSet")
StepVerb = Literal[
    "cordon",
    "uncordon",
    "evict",
    "ensure_priority_class",
    "set_priority_class",
    "patch_resources",
    "resize_pod",
]


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Step(_Model):
    """One primitive call. ``params`` keys by verb:

    - cordon / uncordon: {} (``name`` is the node)
    - evict: {} (``namespace``/``name`` is the pod)
    - ensure_priority_class: {"value": int, "description": str}
    - set_priority_class: {"priority_class": str | None}  (kind/ns/name = controller)
    - patch_resources: {"container": str, "requests": {..}, "limits": {..}, "env": {..}}
    - resize_pod: {"container": str, "requests": {..}, "limits": {..}}  (kind Pod: in place,
      through ``pods/<name>/resize``)
    """

    verb: StepVerb
    kind: str
    namespace: str | None = None
    name: str
    params: dict[str, Any] = Field(default_factory=dict)


class ProtectedPod(_Model):
    pod: str = Field(description="namespace/name")
    reason: Literal[
        "daemonset",
        "mirror",
        "critical_priority",
        "protected_label",
        "no_controller",
        "diagnostic",
        "gpu_workload",
        "gang_member",
        "gpunode_itself",
    ]


class PlanNote(_Model):
    """A warning that names things (a gang and its members, the pods a priority would
    preempt): ``code`` picks the sentence in ``templates/sentences/<locale>/notes.j2``."""

    code: str
    params: dict[str, str | int | None] = Field(default_factory=dict)


class Tier3Values(_Model):
    """Proposed caps for the offending workload (editable in the confirmation modal)."""

    container: str
    memory_limit: str
    memory_request: str
    cpu_limit: str | None = None
    cpu_request: str | None = None
    omp_num_threads: int | None = None
    current_working_set_bytes: int | None = None
    memory_limit_bytes: int
    below_working_set: bool = Field(
        False, description="the limit is under the current working set: immediate OOM kill"
    )


class RunbookStep(_Model):
    """A manual step for a human (a process outside Kubernetes): shown as text, never run."""

    unit: str = Field(description="systemd unit or 'comm[pid]'")
    command: str = Field(description="e.g. 'systemctl status nv-hostengine.service'")
    purpose: Literal["inspect", "restart", "kill"]


class ActionPlan(_Model):
    plan_id: str = Field(description="deterministic: hash of node, tier, steps")
    tier: Tier
    node: str
    target: str | None = Field(None, description="Kind/namespace/name of the main target")
    steps: list[Step] = Field(default_factory=list)
    undo: list[Step] = Field(default_factory=list, description="filled after execution")
    blast_radius: list[str] = Field(default_factory=list, description="pods affected")
    restarts: list[str] = Field(
        default_factory=list, description="what restarts (pod priority is immutable)"
    )
    protected: list[ProtectedPod] = Field(default_factory=list)
    reversible: bool = True
    values: Tier3Values | None = None
    warnings: list[str] = Field(default_factory=list, description="stable warning codes")
    notes: list[PlanNote] = Field(default_factory=list, description="warnings with names")
    available: bool = Field(True, description="False when nothing to do; reason in warnings")
    relief_bytes: int = Field(0, description="host memory the plan frees (estimate)")
    shortage_bytes: int = Field(0, description="the node's shortage when planned (0: none)")
    relieves: bool = Field(
        False, description="relief_bytes covers shortage_bytes (False when not short)"
    )
    runbook: list[RunbookStep] = Field(
        default_factory=list, description="manual steps (outside Kubernetes): shown, not run"
    )
