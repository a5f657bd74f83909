"""Scenario model (YAML) and loader. The format is documented in ../scenarios/README.md.

A scenario describes a cluster (nodes, namespaces, priority classes, workloads, PDBs, events)
and what each node's memory looks like (kernel, page cache, per-container use, processes,
GPUs). ``gpunode_sandbox.kubesim.building`` turns it into API objects; ``hosttree`` turns a node
into the host tree the collector reads. Quantities are Kubernetes quantity strings ("64Gi").
"""

from __future__ import annotations

import functools
import pickle
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, model_validator

from gpunode_sandbox.kubesim.expectations import Expected
from gpunode_sandbox.kubesim.quantities import to_bytes

SCENARIO_DIR = Path(__file__).resolve().parent.parent / "scenarios"
Quantity = str | int


class ScenarioError(ValueError):
    """No such scenario, or its YAML is invalid; the message says which and why. The
    commands that load one (``gpunode demo``, ``gpunode sandbox kube``) print it."""


class _M(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Process(_M):
    command: str = Field(description="comm, at most 15 characters shown")
    cmdline: str = ""
    rss_anon: Quantity = 0
    rss_file: Quantity = "40Mi"
    rss_shmem: Quantity = 0
    hugetlb: Quantity = Field(0, description="hugetlbfs pages mapped (status HugetlbPages)")
    gpu_memory: dict[int, Quantity] = Field(
        default_factory=dict, description="GPU index -> memory this PID uses"
    )
    unit: str | None = Field(
        None,
        description="system processes: the systemd unit (``x.service`` / ``x.scope``) under "
        "system.slice; default: the cmdline's program name + .service",
    )
    cgroup: str | None = Field(
        None,
        description="system processes: the full cgroup path instead of ``unit`` (e.g. a "
        "user session scope, or the kubepods scope of a container whose pod is gone)",
    )

    @model_validator(mode="after")
    def _one_placement(self) -> Process:
        if self.unit is not None and self.cgroup is not None:
            raise ValueError(f"process {self.command}: give unit or cgroup, not both")
        if self.unit is not None and not self.unit.endswith((".service", ".scope")):
            raise ValueError(f"process {self.command}: unit {self.unit!r} is not a .service/.scope")
        if (
            self.cgroup is not None
            and self.cgroup != "/"
            and (not self.cgroup or self.cgroup.startswith("/"))
        ):
            raise ValueError(
                f"process {self.command}: cgroup is a path relative to the root ('/': the root)"
            )
        return self

    def cgroup_path(self) -> str:
        """Where a process outside pods lives (relative to the cgroup root; "" the root)."""
        if self.cgroup is not None:
            return self.cgroup.strip("/")
        if self.unit is not None:
            return f"system.slice/{self.unit}"
        program = (self.cmdline or self.command).split()[0].rsplit("/", 1)[-1]
        return f"system.slice/{program}.service"


class Usage(_M):
    """One container's memory cgroup. ``shmem`` (tmpfs, /dev/shm, memory-backed emptyDir)
    is part of ``file`` as in memory.stat; it sits on the anon LRU, so it is never in
    ``inactive_file``."""

    anon: Quantity = "20Mi"
    file: Quantity = "10Mi"
    inactive_file: Quantity | None = Field(
        None, description="default: half of the file pages that are not shmem"
    )
    shmem: Quantity = 0
    kernel: Quantity = "8Mi"
    cpu: Quantity = "100m"
    mlocked: Quantity = Field(
        0,
        description="anon pages locked in RAM (mlock; CUDA's pinned host buffers): memory.stat "
        "'unevictable', meminfo Mlocked/Unevictable; part of anon",
    )
    dirty: Quantity = Field(0, description="file pages not yet written back (part of file)")
    writeback: Quantity = Field(0, description="file pages being written back (part of file)")

    @model_validator(mode="after")
    def _shmem_in_file(self) -> Usage:
        file, shmem = to_bytes(self.file), to_bytes(self.shmem)
        if shmem > file:
            raise ValueError(
                f"usage: shmem ({self.shmem}) is part of file ({self.file}): raise file"
            )
        if to_bytes(self.mlocked) > to_bytes(self.anon):
            raise ValueError(f"usage: mlocked ({self.mlocked}) is part of anon ({self.anon})")
        if to_bytes(self.dirty) + to_bytes(self.writeback) > file - shmem:
            raise ValueError("usage: dirty + writeback are file pages: at most file - shmem")
        if self.inactive_file is not None and to_bytes(self.inactive_file) > file - shmem:
            raise ValueError("usage: inactive_file cannot exceed file - shmem (shmem is anon LRU)")
        return self


class Container(_M):
    name: str
    image: str = "registry.example.com/app:1.0"
    command: list[str] | None = None
    requests: dict[str, Quantity] = Field(default_factory=dict)
    limits: dict[str, Quantity] = Field(default_factory=dict)
    env: dict[str, str] = Field(default_factory=dict)
    usage: Usage = Field(default_factory=Usage)
    processes: list[Process] = Field(default_factory=list)
    restart_count: int = 0
    last_terminated_reason: str | None = None
    resize_policy: dict[str, str] = Field(
        default_factory=dict, description="resource -> NotRequired | RestartContainer"
    )
    restart_policy: Literal["Always"] | None = Field(
        None,
        description="init containers only: Always = a native sidecar (runs beside the "
        "containers, holds memory); a plain init container has finished and holds none",
    )
    logs: str = Field("", description="what the container wrote (pods/log)")
    previous_logs: str = Field(
        "", description="the previous (terminated) instance's log (pods/log?previous=true)"
    )

    @model_validator(mode="after")
    def _previous_needs_a_restart(self) -> Container:
        if self.previous_logs and not self.restart_count:
            raise ValueError(
                f"container {self.name}: previous_logs needs a restart_count (no terminated "
                "instance to read them from)"
            )
        return self


class MemoryVolume(_M):
    """A memory-backed emptyDir (``medium: Memory``, tmpfs) mounted at ``path`` in every
    container; what it holds is the containers' ``usage.shmem``."""

    name: str
    path: str
    size_limit: Quantity | None = None


class Owner(_M):
    """A custom resource that owns the workload (a gang: PyTorchJob, JobSet, Volcano Job...);
    seeded as given, so its CRD must be in ``Scenario.crds``."""

    api_version: str
    kind: str
    name: str
    spec: dict[str, Any] = Field(default_factory=dict)


class Workload(_M):
    kind: Literal["Deployment", "StatefulSet", "DaemonSet", "Job", "Pod"]
    name: str
    namespace: str = "default"
    replicas: int = 1
    nodes: list[str] = Field(
        default_factory=list,
        description="placement, one per replica (cycled); DaemonSet: empty = every node",
    )
    labels: dict[str, str] = Field(default_factory=dict)
    priority_class: str | None = None
    emptydir: bool = False
    resource_claims: list[str] = Field(
        default_factory=list,
        description="DRA: pod resourceClaims (from a ResourceClaimTemplate of the same name), "
        "each used by every container",
    )
    shm_size: Quantity | None = Field(
        None, description="mount a memory-backed emptyDir (sizeLimit) at /dev/shm"
    )
    containers: list[Container]
    init_containers: list[Container] = Field(
        default_factory=list,
        description="init containers; restart_policy Always makes one a native sidecar",
    )
    memory_volumes: list[MemoryVolume] = Field(
        default_factory=list, description="memory-backed emptyDirs at any path"
    )
    phase: Literal["Running", "Pending", "Succeeded", "Failed"] = "Running"
    annotations: dict[str, str] = Field(default_factory=dict, description="pod annotations")
    pod_spec: dict[str, Any] = Field(
        default_factory=dict,
        description="more pod spec fields (tolerations, nodeSelector, affinity, "
        "serviceAccountName...), merged into the template",
    )
    controller_spec: dict[str, Any] = Field(
        default_factory=dict,
        description="more controller spec fields (strategy, updateStrategy, podFailurePolicy)",
    )
    controller_labels: dict[str, str] = Field(default_factory=dict)
    controller_annotations: dict[str, str] = Field(default_factory=dict)
    owner: Owner | None = None

    @model_validator(mode="after")
    def _stageable(self) -> Workload:
        """What the stand-in cannot stage is an error, never a silent zero."""
        where = f"workload {self.namespace}/{self.name}"
        if self.kind == "Pod" and self.replicas != 1:
            raise ValueError(f"{where}: a bare Pod is one pod; use a Deployment for replicas")
        for c in self.init_containers:
            if c.restart_policy is None and (c.processes or c.logs or c.previous_logs):
                raise ValueError(
                    f"{where}: init container {c.name} has finished before the containers "
                    "start: it holds no memory and runs no process; give it restart_policy: "
                    "Always (a native sidecar) or drop its processes and logs"
                )
            if c.restart_policy is None and "usage" in c.model_fields_set:
                raise ValueError(
                    f"{where}: init container {c.name} has finished: its usage cannot be "
                    "staged; give it restart_policy: Always (a native sidecar)"
                )
        for c in self.containers:
            if c.restart_policy is not None:
                raise ValueError(
                    f"{where}: container {c.name}: restart_policy is for init containers "
                    "(native sidecars)"
                )
        names = [c.name for c in [*self.containers, *self.init_containers]]
        if len(set(names)) != len(names):
            raise ValueError(f"{where}: container names must be unique across init containers")
        paths = [v.path for v in self.memory_volumes] + (["/dev/shm"] if self.shm_size else [])
        if len(set(paths)) != len(paths) or any(not p.startswith("/") for p in paths):
            raise ValueError(f"{where}: memory_volumes need distinct absolute paths")
        if self.owner is not None:
            from gpunode_sandbox.kubesim.resources import BY_API

            if (self.owner.api_version, self.owner.kind) not in BY_API:
                raise ValueError(
                    f"{where}: owner {self.owner.api_version} {self.owner.kind} is a kind the "
                    "stand-in does not serve; pick one it knows (PyTorchJob, MPIJob, Volcano "
                    "Job, RayCluster, JobSet...)"
                )
        return self

    def running_containers(self) -> list[Container]:
        """Containers that hold memory while the pod runs: the containers and the native
        sidecars."""
        return [*self.containers, *(c for c in self.init_containers if c.restart_policy)]


class Gpus(_M):
    count: int
    product: str = "NVIDIA-H100-80GB-HBM3"
    memory_total: Quantity = "80Gi"
    reserved: Quantity = "512Mi"
    utilization_percent: int = 0
    driver_version: str = "550.127.05"
    memory_info_version: Literal[1, 2] = 2
    fail: Literal["library_not_found", "driver_not_loaded", "no_permission"] | None = None
    mig: bool = Field(
        False,
        description="MIG mode: NVML lists the GPUs, but listing their processes needs the MIG "
        "monitor capability (NVIDIA_MIG_MONITOR_DEVICES=all and CAP_SYS_ADMIN), else "
        "NVML_ERROR_NO_PERMISSION",
    )


class Kernel(_M):
    """Node memory outside pods. MemFree is what is left of the node's memory."""

    slab_reclaimable: Quantity = "1Gi"
    slab_unreclaimable: Quantity = "1Gi"
    page_tables: Quantity = "256Mi"
    kernel_stack: Quantity = "64Mi"
    percpu: Quantity = "128Mi"
    other: Quantity = Field("512Mi", description="vmalloc, driver allocations, ...")
    page_cache: Quantity = Field("4Gi", description="host page cache outside pods")
    buffers: Quantity = "256Mi"
    shmem: Quantity = 0
    system_anon: Quantity = Field("2Gi", description="anon memory of non-pod processes")
    mlocked: Quantity = Field(
        0, description="locked anon memory of non-pod processes (part of system_anon)"
    )
    dirty: Quantity = Field("2Mi", description="dirty host page cache (part of page_cache)")
    writeback: Quantity = Field(0, description="host page cache under writeback")
    mem_available: Quantity | None = Field(
        None,
        description="MemAvailable with the scenario's starting pods; later readings move from "
        "it as pods leave or shrink (see kubesim/procfiles.py)",
    )
    sock_tcp_pages: int = 2048
    slab_caches: dict[str, Quantity] = Field(
        default_factory=dict,
        description="/proc/slabinfo: the biggest caches (name -> bytes); the rest of Slab is "
        "spread over common caches",
    )
    slabinfo: bool = Field(
        True,
        description="write /proc/slabinfo; False: absent (the collector records a gap; a "
        "denial cannot be staged for a collector that runs as root)",
    )


class HugePool(_M):
    """One hugetlb pool. The first pool of a node is the default size (meminfo's
    ``HugePages_*`` lines); ``Hugetlb`` sums every pool. ``total`` includes ``surplus``."""

    size: Literal["2Mi", "1Gi"] = "2Mi"
    total: int = Field(ge=0)
    free: int | None = Field(None, ge=0, description="default: all free")
    reserved: int = Field(0, ge=0, description="HugePages_Rsvd: promised, not yet faulted")
    surplus: int = Field(0, ge=0)

    @model_validator(mode="after")
    def _counts(self) -> HugePool:
        free = self.total if self.free is None else self.free
        if free > self.total or self.reserved > free or self.surplus > self.total:
            raise ValueError(
                f"hugepages {self.size}: need free <= total, reserved <= free, surplus <= total"
            )
        return self

    @property
    def free_pages(self) -> int:
        return self.total if self.free is None else self.free

    @property
    def page_bytes(self) -> int:
        return to_bytes(self.size)


class Pressure(_M):
    some_avg10: float = 0.0
    some_avg60: float = 0.0
    some_avg300: float = 0.0
    some_total_us: int = 0
    full_avg10: float = 0.0
    full_avg60: float = 0.0
    full_avg300: float = 0.0
    full_total_us: int = 0


class KernelEvent(_M):
    """A kernel log record the node's ``/dev/kmsg`` holds (``kubesim/kmsgfiles.py``).

    ``oom_kill``: the OOM killer killed ``command`` of the first pod of ``workload``
    (``namespace/name``, pods named ``name`` or ``name-...``) on this node, container
    ``container`` (default: its first); ``scope`` ``node`` = the global OOM killer, ``cgroup`` =
    the cgroup at ``limit`` (container, pod, kubepods) hit its limit. ``xid``: GPU ``gpu``
    raised XID ``code`` (driver text by code unless ``message``).
    """

    kind: Literal["oom_kill", "xid"]
    age_s: int = Field(600, ge=0, description="seconds before the diagnosis")
    workload: str | None = None
    container: str | None = None
    command: str = "python"
    pid: int | None = Field(None, description="default: the container's first host PID")
    uid: int = 1000
    invoked_by: str | None = None
    oom_score_adj: int = 0
    scope: Literal["node", "cgroup"] = "node"
    limit: Literal["container", "pod", "kubepods"] = "container"
    anon_rss: Quantity = "1Gi"
    file_rss: Quantity = "40Mi"
    gpu: int = 0
    code: int = 79
    message: str | None = None


class ResourceSlice(_M):
    """One DRA driver's devices on a node (``resource.k8s.io/v1`` ResourceSlice)."""

    driver: str = "gpu.nvidia.com"
    devices: int = Field(1, ge=1, description="devices named gpu-0 .. gpu-N-1")
    product: str = "NVIDIA-H100-80GB-HBM3"


class DcgmExporter(_M):
    """dcgm-exporter runs on this node (``kubesim.dcgmexporter``): its ``/metrics`` over
    real HTTP, behind the GPU Operator's Service and an EndpointSlice."""

    pod_mapping: bool = Field(
        True,
        description="DCGM_EXPORTER_KUBERNETES=true: series carry pod/namespace/container",
    )
    ready: bool = Field(True, description="the exporter pod's endpoint is ready")


class Node(_M):
    name: str
    labels: dict[str, str] = Field(default_factory=dict)
    capacity: dict[str, Quantity]
    allocatable: dict[str, Quantity]
    conditions: dict[str, str] = Field(
        default_factory=dict, description="type -> status; Ready defaults True"
    )
    unschedulable: bool = False
    cgroup_version: Literal[1, 2] = 2
    cgroup_driver: Literal["systemd", "cgroupfs"] = "systemd"
    runtime: Literal["containerd", "cri-o", "docker"] = "containerd"
    kernel_version: str = "6.8.0-45-generic"
    os_image: str = "Ubuntu 24.04.1 LTS"
    kernel: Kernel = Field(default_factory=Kernel)
    pressure: Pressure = Field(default_factory=Pressure)
    gpus: Gpus | None = None
    hugepages: list[HugePool] = Field(default_factory=list)
    system_processes: list[Process] = Field(default_factory=list)
    kernel_log: list[KernelEvent] = Field(
        default_factory=list, description="OOM kills and XIDs in the node's /dev/kmsg"
    )
    nvidia_default_runtime: bool = Field(
        False,
        description="the NVIDIA Container Toolkit is the container runtime's default: a pod "
        "with NVIDIA_VISIBLE_DEVICES gets NVML without any RuntimeClass",
    )
    resource_slices: list[ResourceSlice] = Field(
        default_factory=list,
        description="DRA: ResourceSlices a driver publishes for this node (resource.k8s.io)",
    )
    dcgm_exporter: DcgmExporter | None = Field(
        None, description="dcgm-exporter runs here (GPU nodes only); None: not installed"
    )
    runtime_allows_kmsg: bool = Field(
        False,
        description="the node's container runtime admits /dev/kmsg to unprivileged containers "
        "(e.g. CRI-O additional_devices); otherwise its device cgroup refuses the open with "
        "EPERM to any container that is not privileged, as real runtimes do by default",
    )

    @model_validator(mode="after")
    def _consistent(self) -> Node:
        sizes = [p.size for p in self.hugepages]
        if len(set(sizes)) != len(sizes):
            raise ValueError(f"node {self.name}: one hugepages pool per size")
        for pool in self.hugepages:
            key = f"hugepages-{pool.size}"
            for side in (self.capacity, self.allocatable):
                if key in side and to_bytes(side[key]) != pool.total * pool.page_bytes:
                    raise ValueError(
                        f"node {self.name}: {key} must be total x size "
                        f"({pool.total * pool.page_bytes} bytes), as the kubelet reports it"
                    )
        huge = sum(p.total * p.page_bytes for p in self.hugepages)
        if huge and "memory" in self.allocatable and "memory" in self.capacity:
            room = to_bytes(self.capacity["memory"]) - huge
            if to_bytes(self.allocatable["memory"]) > room:
                raise ValueError(
                    f"node {self.name}: allocatable memory must leave out the hugepages "
                    f"(at most capacity - {huge} bytes), as the kubelet computes it"
                )
        for p in self.system_processes:
            bad = [i for i in p.gpu_memory if self.gpus is None or not 0 <= i < self.gpus.count]
            if bad:
                raise ValueError(f"node {self.name}: process {p.command} uses GPUs {bad} it lacks")
        shared = max((to_bytes(p.rss_shmem) for p in self.system_processes), default=0)
        if shared > to_bytes(self.kernel.shmem):
            raise ValueError(
                f"node {self.name}: a system process maps {shared} bytes of shmem, more than "
                f"the host's kernel.shmem ({self.kernel.shmem}); raise kernel.shmem"
            )
        k = self.kernel
        if to_bytes(k.mlocked) > to_bytes(k.system_anon):
            raise ValueError(f"node {self.name}: kernel.mlocked is part of system_anon")
        if to_bytes(k.dirty) + to_bytes(k.writeback) > max(to_bytes(k.page_cache), 2 * 2**20):
            raise ValueError(
                f"node {self.name}: kernel.dirty + writeback are page cache: at most page_cache"
            )
        anon = sum(to_bytes(p.rss_anon) for p in self.system_processes)
        if anon > to_bytes(self.kernel.system_anon):
            raise ValueError(
                f"node {self.name}: system processes hold {anon} bytes of anon memory, more "
                f"than kernel.system_anon ({self.kernel.system_anon}); raise system_anon"
            )
        return self


class PriorityClass(_M):
    name: str
    value: int
    description: str = ""
    global_default: bool = False


class Pdb(_M):
    name: str
    namespace: str = "default"
    selector: dict[str, str]
    min_available: int | str | None = None
    max_unavailable: int | str | None = None


class Event(_M):
    namespace: str = "default"
    kind: str = "Pod"
    name: str
    reason: str
    message: str
    type: Literal["Normal", "Warning"] = "Warning"
    count: int = 1
    component: str = "kubelet"
    host: str | None = None
    age_s: int = 600


class OomKill(_M):
    """A kernel OOM kill on ``node``; seeding turns it into the events a real node leaves
    (node-problem-detector's ``OOMKilling``, the kubelet's ``SystemOOM`` for a global one;
    see ``kubesim/npd.py``)."""

    node: str
    pid: int
    process: str
    scope: Literal["cgroup", "global"] = Field(
        "cgroup", description="cgroup: a memory cgroup hit its limit; global: the node ran out"
    )
    total_vm: Quantity = "1Gi"
    anon_rss: Quantity = "1Gi"
    file_rss: Quantity = 0
    shmem_rss: Quantity = 0
    pgtables: Quantity = "2Mi"
    uid: int = 0
    oom_score_adj: int = 0
    age_s: int = 600


class Fault(_M):
    """A scripted failure of diagnostic pods on ``node`` (all nodes when unset):
    ``image_pull`` (ErrImagePull), ``container_error`` (CreateContainerError),
    ``collector_error`` (the collector exits non-zero), ``job_hang`` (pods never start),
    ``collector_slow`` (Running until the deadline)."""

    kind: Literal["image_pull", "container_error", "collector_error", "job_hang", "collector_slow"]
    node: str | None = None


class Scenario(_M):
    name: str
    description: str = ""
    namespaces: list[str] = Field(default_factory=list)
    nodes: list[Node]
    priority_classes: list[PriorityClass] = Field(default_factory=list)
    workloads: list[Workload] = Field(default_factory=list)
    pdbs: list[Pdb] = Field(default_factory=list)
    events: list[Event] = Field(default_factory=list)
    oom_kills: list[OomKill] = Field(default_factory=list)
    runtime_classes: list[str] = Field(
        default_factory=lambda: ["nvidia"],
        description="RuntimeClasses (handler = name); the GPU Operator creates 'nvidia'",
    )
    faults: list[Fault] = Field(default_factory=list)
    crds: list[str] = Field(
        default_factory=list, description="installed custom resources, as plural.group"
    )
    objects: list[dict[str, Any]] = Field(
        default_factory=list, description="more API objects (VPAs, PodGroups), seeded as given"
    )
    expected: Expected | None = Field(
        None, description="the labelled outcome (corpus): what an expert concludes"
    )

    @model_validator(mode="after")
    def _expected_node(self) -> Scenario:
        if self.expected is not None and self.node(self.expected.node) is None:
            raise ValueError(f"expected.node {self.expected.node!r} is not a node of the scenario")
        return self

    def node(self, name: str) -> Node | None:
        return next((n for n in self.nodes if n.name == name), None)

    @classmethod
    def synthetic_fleet(
        cls, nodes: int = 2000, pods: int = 60_000, *, gpu_fraction: float = 0.25
    ) -> Scenario:
        from gpunode_sandbox.kubesim.fleet import synthetic_fleet

        return synthetic_fleet(nodes=nodes, pods=pods, gpu_fraction=gpu_fraction)


def list_scenarios() -> list[str]:
    return sorted(p.stem for p in SCENARIO_DIR.glob("*.yaml"))


#: libyaml's safe loader when PyYAML has it (the same documents, ~8x faster than the pure-Python
#: one; every stand-in started reads its scenario)
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


@functools.lru_cache(maxsize=128)
def _parsed(text: str) -> bytes:
    """The YAML document ``text``, parsed once per process and kept pickled: each caller gets
    a fresh copy to own (a test may change its scenario's objects)."""
    return pickle.dumps(yaml.load(text, Loader=_LOADER))  # noqa: S506 - a safe loader


def load_scenario(name_or_path: str) -> Scenario:
    """A shipped scenario by name (``seed``) or a YAML file by path."""
    path = Path(name_or_path)
    if not path.suffix:
        path = SCENARIO_DIR / f"{name_or_path}.yaml"
    if not path.is_file():
        raise ScenarioError(f"no scenario {name_or_path!r}; shipped: {', '.join(list_scenarios())}")
    try:
        data: Any = pickle.loads(_parsed(path.read_text(encoding="utf-8")))  # noqa: S301
        return Scenario.model_validate(data)
    except (yaml.YAMLError, ValueError) as exc:
        raise ScenarioError(f"scenario {path} is invalid: {exc}") from exc
