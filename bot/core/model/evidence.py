"""What a node can tell about its memory: the EvidenceBundle and its parts.

Produced by ``bot.collectors`` (on the node, inside the diagnostic Job) as JSON on stdout;
read back by the bot from the Job's log. Frozen pydantic models, units in field names
(``_bytes``, ``_s``, ``_us``). A value that could not be read is ``None`` and the reason is a
``Gap`` in ``EvidenceBundle.gaps``: partial evidence is data, never a crash.

Versioning: ``SCHEMA_VERSION`` changes on any incompatible change; readers refuse other
major versions with a clear message.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from bot.core.model.kernel_records import KernelLog
from bot.core.model.redaction import redact_command_line

SCHEMA_VERSION = "1.1"
#: readers accept any minor version of this major
SCHEMA_MAJOR = SCHEMA_VERSION.split(".")[0]

CgroupVersion = Literal[1, 2]
QosTier = Literal["guaranteed", "burstable", "besteffort"]
Runtime = Literal["containerd", "cri-o", "docker", "unknown"]


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


#: a gap's parameter: a word, a count or a few PIDs (raw values; a presenter words them)
GapParam = str | int | list[int]


class Gap(_Model):
    """Something the collector could not verify, and why (shown in every report).

    ``reason`` is the English text (logs, older readers); ``code`` and ``params`` say the
    same as data, and a presenter words them in the reader's language
    (``templates/sentences/gaps.j2``); a gap without a code is shown by its ``reason``."""

    source: str = Field(description="e.g. 'procfs:/proc/1234/smaps_rollup', 'nvml'")
    reason: str = Field(description="e.g. 'permission denied', 'NVML library not found'")
    code: str = Field("", description="e.g. 'permission_denied', 'not_present' (empty: none)")
    params: dict[str, GapParam] = Field(default_factory=dict)


class MemInfo(_Model):
    """``/proc/meminfo``, converted to bytes (kB * 1024). Absent keys are ``None``."""

    mem_total_bytes: int
    mem_free_bytes: int
    mem_available_bytes: int | None = None
    buffers_bytes: int = 0
    cached_bytes: int = 0
    swap_cached_bytes: int | None = None
    active_anon_bytes: int | None = None
    inactive_anon_bytes: int | None = None
    active_file_bytes: int | None = None
    inactive_file_bytes: int | None = None
    anon_pages_bytes: int | None = None
    mapped_bytes: int | None = None
    shmem_bytes: int | None = None
    k_reclaimable_bytes: int | None = None
    slab_bytes: int | None = None
    s_reclaimable_bytes: int | None = None
    s_unreclaim_bytes: int | None = None
    kernel_stack_bytes: int | None = None
    page_tables_bytes: int | None = None
    vmalloc_used_bytes: int | None = None
    percpu_bytes: int | None = None
    swap_total_bytes: int | None = None
    swap_free_bytes: int | None = None
    hugepages_total: int | None = None
    hugepages_free: int | None = None
    hugepage_size_bytes: int | None = None
    hugetlb_bytes: int | None = None
    other: dict[str, int] = Field(
        default_factory=dict, description="every other key: bytes for kB lines, else the count"
    )


class FreeFigures(_Model):
    """What ``free -b`` prints, derived from MemInfo (see
    ``bot.core.diagnosis.memory.free_figures``).

    ``used_bytes`` follows procps-ng >= 4.0.1 (total - available, with its fallbacks);
    ``used_legacy_bytes`` follows procps <= 4.0.0 (total - free - buffers - cache).
    """

    total_bytes: int
    used_bytes: int
    used_legacy_bytes: int
    free_bytes: int
    shared_bytes: int
    buffers_bytes: int
    cache_bytes: int = Field(description="Cached + SReclaimable")
    buff_cache_bytes: int = Field(description="Buffers + Cached + SReclaimable")
    available_bytes: int
    swap_total_bytes: int
    swap_used_bytes: int
    swap_free_bytes: int


class PressureLine(_Model):
    avg10: float
    avg60: float
    avg300: float
    total_us: int


class MemoryPressure(_Model):
    """``/proc/pressure/memory`` (PSI). ``full`` is absent on old kernels."""

    some: PressureLine
    full: PressureLine | None = None


class ContainerMemory(_Model):
    """One container's memory cgroup, as the kernel reports it."""

    cgroup_path: str = Field(description="path relative to the cgroup mount, as found")
    pod_uid: str | None = Field(None, description="dashed pod UID parsed from the path")
    container_id: str | None = Field(None, description="64-hex runtime container id")
    runtime: Runtime = "unknown"
    qos: QosTier | None = None
    usage_bytes: int | None = None
    limit_bytes: int | None = Field(None, description="None = no limit ('max' or unlimited)")
    working_set_bytes: int | None = Field(
        None, description="usage - inactive_file, floored at 0 (kubelet and docker stats)"
    )
    anon_bytes: int | None = None
    file_bytes: int | None = None
    shmem_bytes: int | None = None
    inactive_file_bytes: int | None = None
    kernel_bytes: int | None = Field(None, description="kernel memory charged (v2 'kernel')")
    slab_bytes: int | None = None
    sock_bytes: int | None = None
    oom_events: int | None = Field(None, description="memory.events 'oom' (v2) / failcnt-ish")
    oom_kill_events: int | None = Field(None, description="memory.events 'oom_kill'")


class PodCgroup(_Model):
    """A pod-level memory cgroup (sum of its containers plus pod overhead)."""

    cgroup_path: str
    pod_uid: str
    qos: QosTier | None = None
    usage_bytes: int | None = None
    limit_bytes: int | None = None
    working_set_bytes: int | None = None


class ProcessMemory(_Model):
    pid: int
    command: str = Field(description="comm (from /proc/PID/status Name or comm)")
    cmdline: str = Field(
        "",
        description="argv joined by spaces, truncated, undecodable bytes replaced, secrets "
        "redacted (bot.core.model.redaction)",
    )
    rss_bytes: int
    rss_anon_bytes: int | None = None
    rss_file_bytes: int | None = None
    rss_shmem_bytes: int | None = None
    pod_uid: str | None = None
    container_id: str | None = None
    cgroup_path: str | None = None

    @field_validator("cmdline")
    @classmethod
    def _redacted(cls, value: str) -> str:
        # again on parse: a bundle from a collector older than the redaction is cleaned too
        return redact_command_line(value)


class GpuDevice(_Model):
    index: int
    uuid: str
    name: str
    memory_total_bytes: int
    memory_used_bytes: int = Field(description="NVML 'used' as reported (v2 when available)")
    memory_free_bytes: int
    memory_reserved_bytes: int | None = Field(None, description="v2 only; None on v1 drivers")
    utilization_gpu_percent: int | None = None
    pci_bus_id: str | None = Field(None, description="NVML busId, e.g. 00000000:3B:00.0")


class GpuProcess(_Model):
    gpu_index: int
    gpu_uuid: str
    pid: int = Field(description="host (init-namespace) PID as NVML reports it")
    used_gpu_memory_bytes: int | None = Field(None, description="None when NVML cannot tell")
    command: str | None = None
    pod_uid: str | None = None
    container_id: str | None = None


class PodGpuMemory(_Model):
    """GPU memory a pod holds, as dcgm-exporter attributes it (the third GPU-evidence rung,
    ``bot.core.diagnosis.dcgm``): the framebuffer used on the GPU or MIG instance the kubelet
    assigned to the pod. It is the device's figure, not the pod's processes': when ``shared_by``
    pods
    share the device (time-slicing, MPS) each is shown the same device total."""

    namespace: str
    pod: str
    container: str | None = None
    gpu: str = Field(description="dcgm-exporter's gpu label (device index)")
    gpu_uuid: str | None = None
    mig_profile: str | None = Field(None, description="GPU_I_PROFILE, e.g. 3g.40gb")
    mig_instance: str | None = Field(None, description="GPU_I_ID")
    used_bytes: int = Field(description="DCGM_FI_DEV_FB_USED (MiB) in bytes")
    free_bytes: int | None = Field(None, description="DCGM_FI_DEV_FB_FREE (MiB) in bytes")
    shared_by: int = Field(1, description="pods the exporter labels on the same device")
    source: str = Field(
        description="where it was read, an identifier: dcgm-exporter:SERVICE@ADDRESS:PORT (the "
        "exporter's endpoint) or dcgm-exporter:prometheus"
    )


class SlabCache(_Model):
    """One kernel slab cache from ``/proc/slabinfo`` (kept: the biggest by bytes)."""

    name: str
    active_objs: int
    num_objs: int
    objsize_bytes: int
    bytes: int = Field(description="num_slabs x pagesperslab x page size")


class EvidenceBundle(_Model):
    """Everything one collection saw on one node."""

    schema_version: str = SCHEMA_VERSION
    collector_version: str
    hostname: str
    node_name: str | None = Field(None, description="from NODE_NAME (downward API) when set")
    collected_at: datetime
    duration_s: float = 0.0
    host_root: str = "/"
    cgroup_version: CgroupVersion | None = None
    meminfo: MemInfo | None = None
    free: FreeFigures | None = None
    pressure: MemoryPressure | None = None
    socket_memory_bytes: int | None = Field(
        None, description="TCP+UDP socket memory from /proc/net/sockstat (pages * page size)"
    )
    pods: list[PodCgroup] = Field(default_factory=list)
    containers: list[ContainerMemory] = Field(default_factory=list)
    processes: list[ProcessMemory] = Field(
        default_factory=list, description="top N by RSS plus every GPU process"
    )
    process_count: int = Field(0, description="processes scanned (not only those kept)")
    gpus: list[GpuDevice] = Field(default_factory=list)
    gpu_processes: list[GpuProcess] = Field(default_factory=list)
    nvml_driver_version: str | None = None
    pod_gpu_memory: list[PodGpuMemory] = Field(
        default_factory=list,
        description="per-pod GPU memory from dcgm-exporter, when NVML gave no per-process figures",
    )
    kernel_log: KernelLog | None = Field(
        None, description="OOM kills and XIDs from /dev/kmsg; None when unread (see gaps)"
    )
    slab_caches: list[SlabCache] = Field(
        default_factory=list,
        description="top caches from /proc/slabinfo, biggest first; [] when unreadable (a gap)",
    )
    gaps: list[Gap] = Field(default_factory=list)


def foreign_schema(data: Mapping[str, object]) -> str | None:
    """The ``schema_version`` of evidence JSON this gpunode cannot read (another major
    version; ``""`` when it names none), or None when it can. Checked before validating the
    bundle, so a version skew reads as one, not as a list of field errors."""
    version = str(data.get("schema_version", ""))
    return None if version.split(".")[0] == SCHEMA_MAJOR else version
