"""Action plans: effects described as data before anything touches the cluster.

``plan_tier1/2/3`` (in ``bot.core.remedies.planning``) build these from a Diagnosis' inputs; policy
decides on them; the executor in ``bot.kube`` maps each ``Step`` onto one remedy primitive
(``bot.services.ports.KubePort``), dry run first. ``undo`` is the list of steps that
restores the previous state, filled from the captured before-state.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from bot.core.model.changes import EnvValues, ResourceValues
from bot.core.model.refs import ObjectRef

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
    "annotate_node",
]


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class _Params(_Model):
    """A step's parameters. Read-only mapping access (``get``, ``[]``) is for templates,
    which read plans the same whether they hold models or stored JSON; code reads fields."""

    def get(self, key: str, default: object = None) -> object:
        return getattr(self, key, default) if key in type(self).model_fields else default

    def __getitem__(self, key: str) -> object:
        if key not in type(self).model_fields:
            raise KeyError(key)
        return getattr(self, key)


class NoParams(_Params):
    """cordon / uncordon (``name`` is the node), evict (``namespace``/``name`` the pod)."""


class PriorityClassParams(_Params):
    """ensure_priority_class (``name`` is the class)."""

    value: int
    description: str = ""
    preemption_policy: str = "Never"


class PriorityClassNameParams(_Params):
    """set_priority_class (kind/namespace/name = the controller); None removes it."""

    priority_class: str | None


class PatchResourcesParams(_Params):
    """patch_resources: one container of a controller's pod template. A None value removes
    the key (undo); an env value is a literal, a whole entry to restore, or None."""

    container: str
    requests: ResourceValues = Field(default_factory=dict)
    limits: ResourceValues = Field(default_factory=dict)
    env: EnvValues = Field(default_factory=dict)


class AnnotateNodeParams(_Params):
    """annotate_node (``name`` is the node): the autoscalers' scale-down protection
    (``bot.core.remedies.autoscalers.NODE_PROTECTION``); None removes a key (undo, resolve)."""

    annotations: dict[str, str | None]


class ResizePodParams(_Params):
    """resize_pod (kind Pod): one container in place, through ``pods/<name>/resize``."""

    container: str
    requests: ResourceValues = Field(default_factory=dict)
    limits: ResourceValues = Field(default_factory=dict)


StepParams = (
    PriorityClassParams
    | PriorityClassNameParams
    | PatchResourcesParams
    | ResizePodParams
    | AnnotateNodeParams
    | NoParams
)
#: the parameters each verb takes
PARAMS: dict[StepVerb, type[_Params]] = {
    "cordon": NoParams,
    "uncordon": NoParams,
    "evict": NoParams,
    "ensure_priority_class": PriorityClassParams,
    "set_priority_class": PriorityClassNameParams,
    "patch_resources": PatchResourcesParams,
    "resize_pod": ResizePodParams,
    "annotate_node": AnnotateNodeParams,
}


class Step(_Model):
    """One primitive call on one object; ``params`` are typed by verb (``PARAMS``): a dict
    given for them (a stored plan, a test) is validated as the verb's model."""

    verb: StepVerb
    kind: str
    namespace: str | None = None
    name: str
    params: StepParams = Field(default_factory=NoParams)

    @model_validator(mode="before")
    @classmethod
    def _params_of_the_verb(cls, data: Any) -> Any:
        if isinstance(data, dict) and data.get("verb") in PARAMS:
            raw = data.get("params")
            want = PARAMS[data["verb"]]
            if raw is None:
                data = {**data, "params": want()}
            elif isinstance(raw, dict):
                data = {**data, "params": want.model_validate(raw)}
        return data

    @model_validator(mode="after")
    def _params_match_the_verb(self) -> Step:
        if type(self.params) is not PARAMS[self.verb]:
            raise ValueError(
                f"a {self.verb} step takes {PARAMS[self.verb].__name__}, "
                f"not {type(self.params).__name__}"
            )
        return self

    @property
    def ref(self) -> ObjectRef:
        """The object the step calls on, as the KubePort names it. A plan names no
        namespace (None) for a cluster-scoped object; its ``ObjectRef`` says so
        (``ObjectRef.cluster_scoped``), so callers never coerce ``namespace`` themselves."""
        if self.namespace is None:
            return ObjectRef.cluster_scoped(self.kind, self.name)
        return ObjectRef(self.kind, self.namespace, self.name)

    @property
    def container(self) -> str:
        """The container a resources step changes ("" for other verbs)."""
        p = self.params
        return p.container if isinstance(p, PatchResourcesParams | ResizePodParams) else ""


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
        "not_needed",
        "do_not_disrupt",
        "safe_to_evict_false",
        "pdb_blocked",
    ] = Field(
        description="why tier 1 leaves it alone; not_needed: the pods before it cover it; "
        "do_not_disrupt / safe_to_evict_false: the autoscalers' annotations "
        "(bot.core.remedies.autoscalers); pdb_blocked: the eviction API would refuse it "
        "(bot.core.remedies.budgets, ``refusal`` says why)"
    )
    refusal: Literal["no_disruption_allowed", "several_budgets", "status_behind"] | None = Field(
        None,
        description="why the eviction API would refuse it now, also on a pod protected for "
        "another reason (a bare pod): its budget allows no disruption (429), more than one "
        "budget selects it (500), its budget's status is behind its spec (429)",
    )
    budget: str | None = Field(None, description="the PodDisruptionBudget(s) refusing it")
    needs: int | None = Field(None, description="the budget's status.desiredHealthy")
    has: int | None = Field(None, description="the budget's status.currentHealthy")


class PlanNote(_Model):
    """A warning that names things (a gang and its members, the pods a priority would
    preempt): ``code`` picks the sentence in ``templates/sentences/notes.j2``."""

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
    purpose: Literal["cordon", "inspect", "restart", "kill", "uncordon"]


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
