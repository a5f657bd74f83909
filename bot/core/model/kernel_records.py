"""The kernel's own record of an incident, as the collector read it from ``/dev/kmsg``.

``KernelLog`` is part of the ``EvidenceBundle`` (field ``kernel_log``; None when the log could
not be read, with a gap that says why). Produced by ``bot.collectors.kmsg``; the formats it
parses are documented there. Times are UTC wall-clock (boot time + the record's stamp); a
record whose time could not be placed (no ``btime``) has ``at`` None.
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class OomKill(_Model):
    """One victim of the kernel's OOM killer.

    ``scope``: ``cgroup`` when a memory cgroup hit its own limit (``CONSTRAINT_MEMCG``: the
    container's, the pod's or the kubepods limit, see ``oom_memcg``), ``node`` when the
    whole machine ran out (``CONSTRAINT_NONE``, the global OOM killer; also cpuset/mempolicy).
    """

    at: datetime | None
    uptime_us: int
    scope: Literal["cgroup", "node"]
    constraint: str | None = Field(None, description="CONSTRAINT_NONE, CONSTRAINT_MEMCG, ...")
    invoked_by: str | None = Field(None, description="comm of the task whose allocation failed")
    pid: int
    comm: str
    uid: int | None = None
    total_vm_bytes: int | None = None
    anon_rss_bytes: int | None = None
    file_rss_bytes: int | None = None
    shmem_rss_bytes: int | None = None
    oom_memcg: str | None = Field(None, description="the cgroup whose limit was hit")
    task_memcg: str | None = Field(None, description="the victim's own memory cgroup")
    pod_uid: str | None = Field(None, description="dashed pod UID parsed from task_memcg")
    container_id: str | None = Field(None, description="64-hex id parsed from task_memcg")


class XidEvent(_Model):
    """One NVIDIA XID error. ``gpu_index``/``gpu_uuid`` come from NVML's PCI bus id."""

    at: datetime | None
    uptime_us: int
    pci_bus_id: str | None = Field(None, description="domain:bus:device, e.g. 0000:3b:00")
    code: int
    pid: int | None = None
    process: str | None = None
    message: str = ""
    gpu_index: int | None = None
    gpu_uuid: str | None = None


class KernelLog(_Model):
    source: str = "/dev/kmsg"
    window_s: int
    boot_time: datetime | None = None
    records_read: int = 0
    first_record_at: datetime | None = Field(
        None, description="oldest record still in the ring buffer (older ones were overwritten)"
    )
    oom_kills: list[OomKill] = Field(default_factory=list)
    xids: list[XidEvent] = Field(default_factory=list)
