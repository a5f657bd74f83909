"""Scenario model (YAML) and loader. The format is documented in ../scenarios/README.md.

A scenario describes a cluster (nodes, namespaces, priority classes, workloads, PDBs, events)
and what each node's memory looks like (kernel, page cache, per-container use, processes,
GPUs). ``bot.sandbox.kubesim.building`` turns it into API objects; ``hosttree`` turns a node
into the host tree the collector reads. Quantities are Kubernetes quantity strings ("64Gi").
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field

from bot.errors import ConfigError

SCENARIO_DIR = Path(__file__).resolve().parent.parent / "scenarios"
Quantity = str | int


class _M(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Process(_M):
    command: str = Field(description="comm, at most 15 characters shown")
    cmdline: str = ""
    rss_anon: Quantity = 0
    rss_file: Quantity = "40Mi"
    rss_shmem: Quantity = 0
    gpu_memory: dict[int, Quantity] = Field(
        default_factory=dict, description="GPU index -> memory this PID uses"
    )


class Usage(_M):
    anon: Quantity = "20Mi"
    file: Quantity = "10Mi"
    inactive_file: Quantity | None = Field(None, description="default: half of file")
    shmem: Quantity = 0
    kernel: Quantity = "8Mi"
    cpu: Quantity = "100m"


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
    containers: list[Container]
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


class Gpus(_M):
    count: int
    product: str = "NVIDIA-H100-80GB-HBM3"
    memory_total: Quantity = "80Gi"
    reserved: Quantity = "512Mi"
    utilization_percent: int = 0
    driver_version: str = "550.127.05"
    memory_info_version: Literal[1, 2] = 2
    fail: Literal["library_not_found", "driver_not_loaded", "no_permission"] | None = None


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
    mem_available: Quantity | None = Field(
        None,
        description="MemAvailable with the scenario's starting pods; later readings move from "
        "it as pods leave or shrink (see kubesim/procfiles.py)",
    )
    sock_tcp_pages: int = 2048


class Pressure(_M):
    some_avg10: float = 0.0
    some_avg60: float = 0.0
    some_avg300: float = 0.0
    some_total_us: int = 0
    full_avg10: float = 0.0
    full_avg60: float = 0.0
    full_avg300: float = 0.0
    full_total_us: int = 0


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
    system_processes: list[Process] = Field(default_factory=list)


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


class Fault(_M):
    """A scripted failure of diagnostic pods on ``node`` (all nodes when unset):
    ``image_pull`` (ErrImagePull), ``collector_error`` (the collector exits non-zero),
    ``job_hang`` (pods never start), ``collector_slow`` (Running until the deadline)."""

    kind: Literal["image_pull", "collector_error", "job_hang", "collector_slow"]
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
    faults: list[Fault] = Field(default_factory=list)
    crds: list[str] = Field(
        default_factory=list, description="installed custom resources, as plural.group"
    )
    objects: list[dict[str, Any]] = Field(
        default_factory=list, description="more API objects (VPAs, PodGroups), seeded as given"
    )

    def node(self, name: str) -> Node | None:
        return next((n for n in self.nodes if n.name == name), None)

    @classmethod
    def synthetic_fleet(
        cls, nodes: int = 2000, pods: int = 60_000, *, gpu_fraction: float = 0.25
    ) -> Scenario:
        from bot.sandbox.kubesim.fleet import synthetic_fleet

        return synthetic_fleet(nodes=nodes, pods=pods, gpu_fraction=gpu_fraction)


def list_scenarios() -> list[str]:
    return sorted(p.stem for p in SCENARIO_DIR.glob("*.yaml"))


def load_scenario(name_or_path: str) -> Scenario:
    """A shipped scenario by name (``seed``) or a YAML file by path."""
    path = Path(name_or_path)
    if not path.suffix:
        path = SCENARIO_DIR / f"{name_or_path}.yaml"
    if not path.is_file():
        raise ConfigError(f"no scenario {name_or_path!r}; shipped: {', '.join(list_scenarios())}")
    try:
        data: Any = yaml.safe_load(path.read_text(encoding="utf-8"))
        return Scenario.model_validate(data)
    except (yaml.YAMLError, ValueError) as exc:
        raise ConfigError(f"scenario {path} is invalid: {exc}") from exc
