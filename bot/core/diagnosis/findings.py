"""The diagnosis as data: facts with sources, findings, the memory ledger, the verdict,
talking points, and the Diagnosis that carries them all.

Produced by ``bot.core.reporting.analysis.analyze``; rendered by ``bot.render``. No wording lives
here beyond stable codes and keys: sentences are in ``templates/`` so they can be reviewed
(and translated) in one place. Every number a person reads is a ``Fact`` with its source.
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from bot.core.diagnosis.history import History
from bot.core.model.actions import ActionPlan
from bot.core.model.evidence import Gap

Severity = Literal["critical", "warning", "info", "ok"]
Unit = Literal["bytes", "percent", "count", "seconds", "ratio", "text", "cores"]
Audience = Literal["ai_team", "ops_team"]


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Fact(_Model):
    """One measured or read number, and where it came from.

    ``source`` examples: ``procfs:/proc/meminfo``, ``cgroup:/kubepods/burstable/pod.../``,
    ``k8s:node/status.allocatable``, ``k8s:pod/ml/train-0``, ``nvml:GPU-...``,
    ``psi:/proc/pressure/memory``.
    """

    key: str = Field(description="stable id, e.g. 'container.working_set_bytes'")
    label: str = Field(description="short human label, e.g. 'working set'")
    value: float | int | str | None
    unit: Unit
    source: str


class Finding(_Model):
    code: str = Field(description="stable code, e.g. 'HOST_MEM_NON_GPU_WORKLOAD'")
    severity: Severity
    subject: str = Field(description="what it is about: node name, ns/pod, GPU uuid")
    facts: list[Fact] = Field(default_factory=list)
    params: dict[str, str | int | float] = Field(
        default_factory=dict, description="values the template sentence interpolates"
    )


LedgerCategory = Literal[
    "kernel_slab_unreclaimable",
    "kernel_slab_reclaimable",
    "kernel_page_tables",
    "kernel_stacks",
    "kernel_other",
    "page_cache",
    "pod",
    "system",
    "unattributed",
    "free",
]


class LedgerEntry(_Model):
    category: LedgerCategory
    label: str = Field(description="e.g. 'ml/preprocess-7d9f (working set)'")
    bytes: int
    source: str
    pod_key: str | None = Field(None, description="namespace/name for pod entries")
    working_set_bytes: int | None = Field(
        None,
        description="pod entries: the pod's working set (usage - inactive_file), the kubelet's "
        "measure for eviction and the one figure every section states for the pod; ``bytes`` "
        "is its ledger share (anon + active file: its kernel memory is in the kernel lines)",
    )

    @property
    def figure(self) -> int:
        """The one figure a pod is named with everywhere: its working set when known."""
        return self.working_set_bytes if self.working_set_bytes is not None else self.bytes


class Ledger(_Model):
    """Node total = kernel + page cache + pods' working sets + unattributed + free (+ residual).

    ``residual_bytes`` is what the parts do not explain (positive: unexplained use;
    negative: double counting); it is always stated, never hidden.
    """

    total_bytes: int
    entries: list[LedgerEntry] = Field(default_factory=list)
    residual_bytes: int = 0


VerdictCause = Literal[
    "host_memory_workload",
    "container_limit",
    "kernel_slab",
    "kernel_memory",
    "system_process",
    "shmem",
    "hugepages",
    "gpu_memory",
    "gpu_xid",
    "gpu_orphan",
    "overcommit",
    "healthy",
    "inconclusive",
]
"""What a verdict can blame (the contract other code and the corpus key on):

- ``host_memory_workload``: a pod / owner group holds host memory (any QoS, GPU pods too);
  subject ``namespace/pod`` of the group's biggest pod (``owner_kind``, ``owner_name``,
  ``pods_in_group`` in params).
- ``container_limit``: a container at/over its own cgroup limit or cgroup-OOM-killed while
  the node has headroom; subject the pod.
- ``kernel_slab``: unreclaimable slab; ``kernel_memory``: other kernel memory (page tables,
  stacks, vmalloc, percpu, socket buffers); subject the node.
- ``system_process``: a process outside pods; subject its cgroup unit
  (``system.slice/nv-hostengine.service``) when known, else ``comm[pid]``.
- ``shmem``: tmpfs / ``/dev/shm`` / memory-backed emptyDir (not reclaimable while its files
  exist); subject the owning pod or ``host``.
- ``hugepages``: reserved ``HugePages_Total x Hugepagesize``, used or not; subject the node.
- ``gpu_memory``: a GPU's memory exhausted by a pod's processes; ``gpu_orphan``: GPU memory
  held by a process of no pod; subject the GPU uuid, the process in params.
- ``overcommit``, ``healthy``, ``inconclusive``: subject the node.
"""


class Contribution(_Model):
    """One consumer the verdict names besides (or as) the primary one."""

    cause: VerdictCause
    subject: str
    bytes: int = Field(description="host bytes (GPU bytes for gpu_* causes)")
    share: float = Field(description="bytes / MemTotal (GPU total for gpu_* causes)")


class Verdict(_Model):
    """The verdict, computed from the attribution (``bot.core.diagnosis.consumers``), not rule
    order.

    ``shortage_bytes``: how far the node is short of memory (MemAvailable below the target
    ``shortage_target_available_share`` x MemTotal), 0 when it is not short.
    ``share``: the primary consumer's bytes / MemTotal (per GPU for gpu causes);
    ``margin``: its share minus the next consumer's (``margin_bytes`` in bytes).
    ``contributing``: the other consumers that explain the shortage, biggest first.
    ``confidence`` comes from the margin and from evidence gaps (``gaps`` counts the ones
    that bear on the verdict).
    """

    cause: VerdictCause
    subject: str | None = Field(None, description="the workload / node / GPU blamed")
    confidence: Literal["high", "medium", "low"] = "medium"
    facts: list[Fact] = Field(default_factory=list)
    params: dict[str, str | int | float] = Field(default_factory=dict)
    shortage_bytes: int = 0
    primary_bytes: int = 0
    share: float = 0.0
    margin: float = 0.0
    margin_bytes: int = 0
    contributing: list[Contribution] = Field(default_factory=list)
    gaps: int = Field(0, description="evidence gaps that bear on this verdict")


class TalkingPoint(_Model):
    """A point addressed to one team. ``key`` selects the template sentence.

    ``stance``: whether the evidence supports or contradicts that team's usual position
    ("our GPU use is fine" / "the node is out of memory"), or is neutral advice.
    A point without facts is only allowed with ``unverified=True``.
    """

    audience: Audience
    key: str
    stance: Literal["supports", "contradicts", "neutral"] = "neutral"
    facts: list[Fact] = Field(default_factory=list)
    params: dict[str, str | int | float] = Field(default_factory=dict)
    unverified: bool = False


class DeviceClaim(_Model):
    """A GPU a pod on the node holds through DRA: its ResourceClaim's allocated device."""

    pod: str = Field(description="namespace/name")
    claim: str
    driver: str
    pool: str
    device: str


class Diagnosis(_Model):
    node: str
    collected_at: datetime
    evidence_age_s: float | None = None
    verdict: Verdict
    findings: list[Finding] = Field(default_factory=list)
    ledger: Ledger
    talking_points: list[TalkingPoint] = Field(default_factory=list)
    plans: list[ActionPlan] = Field(default_factory=list)
    unverified: list[Gap] = Field(default_factory=list, description="what was not verified")
    dra_devices: list[DeviceClaim] = Field(
        default_factory=list,
        description="GPUs the node's pods hold through DRA ResourceClaims, by pod",
    )
    history: History | None = Field(
        None,
        description="series and markers over time (bot.core.diagnosis.history); None: not built",
    )
