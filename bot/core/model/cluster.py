"""What the Kubernetes API knows about a node: the ClusterView.

Built by ``bot.kube`` (the gateway) from API objects; consumed by ``bot.core.reporting.analysis``.
Pure data. Quantities keep the API's text (``"64Gi"``) next to a parsed number where the
analysis needs arithmetic (``memory_request_bytes``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime

from pydantic import BaseModel, ConfigDict, Field

from bot.core.model.evidence import QosTier
from bot.core.model.quantity import quantity_value
from bot.core.model.workloads import (
    KueueWorkload,
    LabelSelector,
    PeerPod,
    PodScheduling,
    PodSlot,
    QueueInfo,
    Requirement,
    WorkloadInfo,
)

#: extended resources that are accelerator devices: every ``nvidia.com/*`` resource (whole
#: GPUs, MIG slices such as ``nvidia.com/mig-1g.10gb``, time-sliced ``nvidia.com/gpu.shared``)
#: and AMD GPUs. Pods with ``spec.resourceClaims`` (DRA) count as accelerated too.
ACCELERATOR_PREFIXES = ("nvidia.com/",)
ACCELERATOR_RESOURCES = frozenset({"amd.com/gpu"})
#: container env keys gpunode reads (caps); every other value stays out of the view and the
#: store, since env values often hold tokens
USED_ENV_KEYS = frozenset({"OMP_NUM_THREADS"})


#: Dynamic Resource Allocation drivers whose devices are GPUs (``ResourceSlice.spec.driver``):
#: NVIDIA's k8s-dra-driver-gpu, AMD's and Intel's GPU drivers; any ``gpu.*`` driver name too
GPU_DRA_DRIVERS = frozenset({"gpu.nvidia.com", "gpu.amd.com", "gpu.intel.com"})


def is_accelerator_resource(name: str) -> bool:
    """True for a resource name that requests an accelerator device."""
    return name in ACCELERATOR_RESOURCES or name.startswith(ACCELERATOR_PREFIXES)


def is_gpu_driver(driver: str) -> bool:
    """True for a DRA driver (ResourceSlice ``spec.driver``) that publishes GPUs."""
    return driver in GPU_DRA_DRIVERS or driver.startswith("gpu.")


def gpu_resources(allocatable: Mapping[str, str]) -> dict[str, int]:
    """The accelerator resources a node offers (``nvidia.com/gpu``, ``nvidia.com/gpu.shared``,
    every ``nvidia.com/mig-*``, ``amd.com/gpu``) -> count, zero and unparsable ones left out."""
    out: dict[str, int] = {}
    for name, text in allocatable.items():
        if not is_accelerator_resource(name):
            continue
        value = quantity_value(str(text))
        if value is not None and value > 0:
            out[name] = int(value)
    return out


def is_gpu_node(allocatable: Mapping[str, str], dra_drivers: Iterable[str] = ()) -> bool:
    """THE definition of a GPU node, used by ``top``, preflight, the rules, placement and the
    collector's runtime choice: it offers an accelerator extended resource, or a GPU DRA
    driver publishes ResourceSlices for it."""
    return bool(gpu_resources(allocatable)) or any(is_gpu_driver(d) for d in dra_drivers)


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Condition(_Model):
    type: str
    status: str
    reason: str | None = None
    message: str | None = None
    last_transition_time: datetime | None = None


class Taint(_Model):
    key: str
    value: str | None = None
    effect: str


class RoomOnNode(_Model):
    """Another node as the scheduler sees it: free requests (allocatable minus what its
    non-terminated pods request; cpu in millicores, memory in bytes, other resources in
    units) and the pods a higher priority could preempt there."""

    name: str
    unschedulable: bool = False
    labels: dict[str, str] = Field(default_factory=dict)
    taints: list[Taint] = Field(default_factory=list)
    free: dict[str, int] = Field(default_factory=dict)
    pods: list[PodSlot] = Field(default_factory=list)


class NodePoolInfo(_Model):
    """One autoscaler pool, from its object (not from its nodes)."""

    name: str
    scaler: str = "Karpenter"
    label: str = Field("karpenter.sh/nodepool", description="the label its nodes carry")
    labels: dict[str, str] = Field(default_factory=dict, description="template labels")
    requirements: list[Requirement] = Field(default_factory=list)
    taints: list[Taint] = Field(default_factory=list)
    limits: dict[str, int] = Field(
        default_factory=dict, description="spec.limits, scheduler units (cpu millicores)"
    )
    used: dict[str, int] = Field(default_factory=dict, description="status.resources")
    gpu: bool = Field(False, description="its nodes would be GPU nodes")
    capacity: dict[str, int] = Field(
        default_factory=dict,
        description="one new node's capacity, when the pool states it (cluster-autoscaler's "
        "scale-from-zero annotations); empty: unknown",
    )
    nodes: int | None = Field(None, description="nodes it has now (Cluster API replicas)")
    max_nodes: int | None = Field(None, description="the most nodes it may have")


class NodeInfo(_Model):
    name: str
    uid: str = ""
    labels: dict[str, str] = Field(default_factory=dict)
    capacity: dict[str, str] = Field(default_factory=dict)
    allocatable: dict[str, str] = Field(default_factory=dict)
    conditions: list[Condition] = Field(default_factory=list)
    taints: list[Taint] = Field(default_factory=list)
    unschedulable: bool = False
    ready: bool = True
    gpu_product: str | None = Field(None, description="label nvidia.com/gpu.product")
    kubelet_version: str | None = None
    kernel_version: str | None = None
    os_image: str | None = Field(None, description="nodeInfo.osImage (Bottlerocket, COS...)")
    resource_version: str | None = None
    dra_drivers: list[str] = Field(
        default_factory=list,
        description="DRA drivers with ResourceSlices for this node (resource.k8s.io), sorted",
    )
    annotations: dict[str, str] = Field(
        default_factory=dict,
        description="only the autoscalers' scale-down keys (remedies.autoscalers.NODE_PROTECTION)",
    )

    @property
    def gpu_resources(self) -> dict[str, int]:
        """Accelerator extended resources in allocatable -> count (see ``gpu_resources``)."""
        return gpu_resources(self.allocatable)

    @property
    def gpu_dra_drivers(self) -> list[str]:
        return [d for d in self.dra_drivers if is_gpu_driver(d)]

    @property
    def has_gpus(self) -> bool:
        """A GPU node (``is_gpu_node``): extended resources or GPU DRA ResourceSlices."""
        return is_gpu_node(self.allocatable, self.dra_drivers)

    @property
    def has_nvidia_gpus(self) -> bool:
        """NVIDIA GPUs (NVML can read them): an ``nvidia.com/*`` resource, NVIDIA's DRA
        driver, or GPU feature discovery's ``nvidia.com/gpu.present`` label."""
        return (
            any(r.startswith("nvidia.com/") for r in self.gpu_resources)
            or "gpu.nvidia.com" in self.dra_drivers
            or self.labels.get("nvidia.com/gpu.present") == "true"
        )

    @property
    def mig_resources(self) -> dict[str, int]:
        """MIG slices offered (``nvidia.com/mig-1g.10gb`` -> 7), mixed strategy."""
        return {r: n for r, n in self.gpu_resources.items() if r.startswith("nvidia.com/mig-")}


class OwnerRef(_Model):
    kind: str
    name: str
    api_version: str = ""
    uid: str = ""


class ContainerInfo(_Model):
    name: str
    init: bool = False
    sidecar: bool = Field(False, description="init container with restartPolicy Always")
    image: str = ""
    requests: dict[str, str] = Field(default_factory=dict)
    limits: dict[str, str] = Field(default_factory=dict)
    container_id: str | None = Field(None, description="64-hex id, runtime prefix removed")
    restart_count: int = 0
    last_termination_reason: str | None = None
    env: dict[str, str] = Field(
        default_factory=dict, description="literal values of USED_ENV_KEYS only (never others)"
    )
    memory_resize_policy: str | None = Field(
        None, description="resizePolicy restartPolicy for memory (NotRequired when unset)"
    )


class ClaimedDevice(_Model):
    """One device a pod holds through DRA: a result of its ResourceClaim's allocation
    (``status.allocation.devices.results``: driver, pool, device)."""

    claim: str = Field(description="the ResourceClaim's name")
    driver: str
    pool: str
    device: str


class PodInfo(_Model):
    namespace: str
    name: str
    uid: str
    phase: str = "Running"
    node_name: str | None = None
    qos_class: QosTier = "besteffort"
    priority: int = 0
    priority_class_name: str | None = None
    labels: dict[str, str] = Field(default_factory=dict)
    owners: list[OwnerRef] = Field(
        default_factory=list, description="controller chain, nearest first (RS, Deployment)"
    )
    containers: list[ContainerInfo] = Field(default_factory=list)
    memory_request_bytes: int = Field(0, description="pod total as kubectl aggregates it")
    memory_limit_bytes: int | None = Field(None, description="None when any container is unbounded")
    gpu_request: int = Field(0, description="nvidia.com/gpu requested (whole GPUs only)")
    accelerators: dict[str, int] = Field(
        default_factory=dict,
        description="every accelerator resource requested (nvidia.com/*, amd.com/gpu) -> count",
    )
    resource_claims: list[str] = Field(
        default_factory=list, description="spec.resourceClaims names (DRA devices)"
    )
    dra_devices: list[ClaimedDevice] | None = Field(
        None,
        description="the devices its ResourceClaims were allocated; None when not read (no "
        "claims, no resource.k8s.io, or the read was refused)",
    )
    is_daemonset: bool = False
    is_mirror: bool = False
    has_emptydir: bool = False
    deleting: bool = False
    ready: bool = Field(
        True, description="condition Ready is True (a PodDisruptionBudget counts it healthy)"
    )
    created_at: datetime | None = None
    service_account: str | None = None
    annotations: dict[str, str] = Field(
        default_factory=dict, description="only the keys gpunode reads (gangs, GitOps)"
    )
    scheduling: PodScheduling | None = Field(None, description="what the scheduler matches")

    @property
    def accelerator_request(self) -> int:
        """Accelerator devices requested through extended resources (whole GPUs, MIG slices,
        shared GPUs, AMD GPUs); at least ``gpu_request``."""
        return max(self.gpu_request, sum(self.accelerators.values()))

    @property
    def accelerated(self) -> bool:
        """THE definition of a GPU pod: any accelerator resource, or a DRA claim holding a GPU
        driver's device (any claim at all while its ResourceClaims are unread or not yet
        allocated: a claim is presumed a GPU until its devices say otherwise). Such pods are
        critical everywhere (tier 1 never evicts them)."""
        if self.accelerator_request > 0:
            return True
        if not self.resource_claims:
            return False
        if not self.dra_devices:
            return True
        return any(is_gpu_driver(d.driver) for d in self.dra_devices)

    @property
    def gpu_devices(self) -> list[ClaimedDevice]:
        """The GPU devices its DRA claims hold ([] when unread or none)."""
        return [d for d in self.dra_devices or [] if is_gpu_driver(d.driver)]

    @property
    def top_owner(self) -> OwnerRef | None:
        return self.owners[-1] if self.owners else None

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"


class EventInfo(_Model):
    namespace: str = ""
    involved_kind: str
    involved_name: str
    reason: str
    message: str = ""
    type: str = "Normal"
    count: int = 1
    last_seen: datetime | None = None


class ResourceAllocation(_Model):
    """One row of kubectl's "Allocated resources" with the numbers behind it."""

    resource: str
    requests: str = Field(description="canonical quantity text as kubectl prints it")
    limits: str
    requests_value: float
    limits_value: float
    allocatable_value: float | None
    requests_percent: int | None = Field(None, description="None for extended resources")
    limits_percent: int | None = None


class PodMetrics(_Model):
    namespace: str
    name: str
    memory_working_set_bytes: int


class PriorityClassInfo(_Model):
    name: str
    value: int
    global_default: bool = False
    preemption_policy: str | None = None


class BudgetInfo(_Model):
    """A PodDisruptionBudget as the disruption controller reports it now (``status``): the
    eviction API refuses (429) to evict a pod it selects while ``disruptions_allowed`` is 0,
    saying "needs ``desired_healthy`` healthy pods and has ``current_healthy``"."""

    namespace: str
    name: str
    selector: LabelSelector | None = Field(
        None, description="None: a nil selector (selects no pod); empty: every pod"
    )
    disruptions_allowed: int = Field(0, description="status.disruptionsAllowed")
    current_healthy: int = Field(0, description="status.currentHealthy")
    desired_healthy: int = Field(0, description="status.desiredHealthy")
    expected_pods: int = Field(0, description="status.expectedPods")
    current: bool = Field(
        True,
        description="status.observedGeneration has caught up with metadata.generation (else "
        "the eviction API refuses every eviction it guards until the controller catches up)",
    )
    unhealthy_pod_eviction_policy: str | None = Field(
        None, description="IfHealthyBudget (the default) or AlwaysAllow"
    )


class NodeLoad(_Model):
    """One GPU node's memory at a glance, for ranking the fleet (``/gpunode top``): read in
    one pass over nodes, pods and pod metrics, without a per-node cluster view."""

    node: NodeInfo
    allocated: list[ResourceAllocation] = Field(default_factory=list)
    working_set_bytes: int | None = Field(None, description="None when metrics.k8s.io is absent")


class ClusterView(_Model):
    """The API's side of a diagnosis, for one node."""

    node: NodeInfo
    pods: list[PodInfo] = Field(default_factory=list, description="non-terminated pods on node")
    events: list[EventInfo] = Field(default_factory=list)
    allocated: list[ResourceAllocation] = Field(default_factory=list)
    allocated_text: str = Field("", description="exact `kubectl describe node` block")
    metrics: list[PodMetrics] | None = Field(None, description="None when metrics.k8s.io absent")
    priority_classes: list[PriorityClassInfo] = Field(default_factory=list)
    server_version: str | None = None
    observed_at: datetime | None = None
    gang_pods: list[PodInfo] = Field(
        default_factory=list, description="members of the node's gangs running elsewhere"
    )
    workloads: list[WorkloadInfo] = Field(
        default_factory=list, description="rollout facts of the top controllers of its pods"
    )
    room: list[RoomOnNode] | None = Field(
        None, description="every node's free requests (None: not read)"
    )
    peers: list[PeerPod] | None = Field(
        None,
        description="bound pods elsewhere that the node's pods' required pod (anti-)affinity "
        "terms select, and every pod with a required anti-affinity (None: not read; then "
        "placement models only one-replica-per-node anti-affinity)",
    )
    namespace_labels: dict[str, dict[str, str]] = Field(
        default_factory=dict,
        description="namespace -> labels, read when a term has a namespaceSelector",
    )
    bot_namespace: str | None = Field(None, description="where gpunode itself runs")
    queues: list[QueueInfo] = Field(
        default_factory=list, description="Kueue LocalQueues of the node's pods (kueue.x-k8s.io)"
    )
    pools: list[NodePoolInfo] | None = Field(
        None,
        description="autoscaler pools read from their objects (Karpenter NodePools); "
        "None: not read",
    )
    kueue_workloads: list[KueueWorkload] = Field(
        default_factory=list, description="Kueue Workloads of the node's queued pods"
    )
    in_place_resize: bool = Field(False, description="the server serves pods/resize")
    budgets: list[BudgetInfo] | None = Field(
        None,
        description="the PodDisruptionBudgets of the node's pods' namespaces, with their "
        "status as read (None: not read; tier 1 then cannot name budget blocks before the "
        "dry run)",
    )
