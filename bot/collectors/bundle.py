"""Assemble one node's evidence: ``collect()`` -> EvidenceBundle.

``collect_document()`` does the work with plain dicts and returns the bundle's JSON-ready
document; ``gpunode collect --format json`` prints it without ever importing pydantic (that
import alone costs ~0.2 s and ~20 MiB, more than the whole scan). ``collect()`` validates the
same document into the frozen ``EvidenceBundle``; tests check the two agree, and the model's
``extra="forbid"`` catches any drift in field names.

Order matters: NVML is read before the process scan so that every process holding GPU memory
is kept alongside the top N by RSS.
"""

from __future__ import annotations

import time

from bot import __version__
from bot.collectors import cgroups, hostos, kmsg, nvml, procfs
from bot.collectors.gaps import GapLog
from bot.core.diagnosis.memory import free_figures_data

TYPE_CHECKING = False  # importing typing costs ~3 ms of `gpunode collect`'s start-up
if TYPE_CHECKING:  # pathlib and pydantic cost ~25 ms of start-up; only types here
    from collections.abc import Callable
    from datetime import datetime
    from pathlib import Path
    from typing import Any

    from bot.core.model.evidence import EvidenceBundle

SCHEMA_VERSION = "1.1"  # must equal bot.core.model.evidence.SCHEMA_VERSION (a test checks)


def iso_utc(ns: int) -> str:
    """``ns`` (nanoseconds since the epoch) as ``datetime.fromtimestamp(.., UTC).isoformat()``
    writes it, microseconds truncated: ``2026-01-01T00:00:00.250000+00:00``, no fraction when
    it is zero (``kmsg.iso_utc_us``: by hand, without ``import datetime``)."""
    return kmsg.iso_utc_us(ns // 1000)


def _hostname(root: str) -> str:
    if root in ("", "/"):
        return hostos.uname().nodename
    for rel in ("proc/sys/kernel/hostname", "etc/hostname"):
        try:
            with open(f"{root}/{rel}", encoding="utf-8", errors="replace") as fh:
                name = fh.read().strip()
        except OSError:
            continue
        if name:
            return name
    return hostos.uname().nodename


def _host_memory(root: str, doc: dict[str, Any], gaps: GapLog, page_size: int) -> None:
    text = procfs.read_text(f"{root}/proc/meminfo", source="procfs:/proc/meminfo", gaps=gaps)
    if text is not None:
        fields, problems = procfs.parse_meminfo(text)
        for code, problem, params in problems:
            gaps.add("procfs:/proc/meminfo", problem, code, params)
        if fields is not None:
            doc["meminfo"] = fields
            doc["free"] = free_figures_data(fields)
    text = procfs.read_text(
        f"{root}/proc/pressure/memory", source="procfs:/proc/pressure/memory", gaps=gaps
    )
    if text is not None:
        doc["pressure"] = procfs.parse_pressure(text)
        if doc["pressure"] is None:
            gaps.add("procfs:/proc/pressure/memory", "unparsable", "unparsable")
    text = procfs.read_text(
        f"{root}/proc/net/sockstat", source="procfs:/proc/net/sockstat", gaps=gaps
    )
    if text is not None:
        doc["socket_memory_bytes"] = procfs.parse_sockstat(text, page_size=page_size)
    # root-only (0400) on most kernels: unreadable is a gap; absent (kernel built without it,
    # or a host tree that does not stage it) is not
    text = procfs.read_text(
        f"{root}/proc/slabinfo", source="procfs:/proc/slabinfo", gaps=gaps, missing_ok=True
    )
    doc["slab_caches"] = procfs.parse_slabinfo(text, page_size=page_size) if text else []


def _kube_cgroups(root: str, version: int, doc: dict[str, Any], gaps: GapLog) -> None:
    mount = cgroups.memory_mount(root, version)
    pod_paths, container_paths = cgroups.find_kube_cgroups(mount)
    for rel in pod_paths:
        kube = cgroups.parse_kube_path(rel)
        figures = cgroups.read_cgroup_memory(mount, rel, version=version, gaps=gaps)
        doc["pods"].append(
            {
                "cgroup_path": rel,
                "pod_uid": kube.pod_uid,
                "qos": kube.qos,
                "usage_bytes": figures["usage_bytes"],
                "limit_bytes": figures["limit_bytes"],
                "working_set_bytes": figures["working_set_bytes"],
            }
        )
    for rel in container_paths:
        doc["containers"].append(_container(mount, rel, version=version, gaps=gaps))


def _container(mount: str, rel: str, *, version: int, gaps: GapLog) -> dict[str, Any]:
    kube = cgroups.parse_kube_path(rel)
    return {
        "cgroup_path": rel,
        "pod_uid": kube.pod_uid,
        "container_id": kube.container_id,
        "runtime": cgroups.runtime_name(kube.runtime_prefix) if kube.container_id else "unknown",
        "qos": kube.qos,
        **cgroups.read_cgroup_memory(mount, rel, version=version, gaps=gaps),
    }


def _process_cgroups(root: str, version: int, doc: dict[str, Any], gaps: GapLog) -> None:
    """Non-pod cgroups of the kept processes (system services, other containers), pod_uid None."""
    mount = cgroups.memory_mount(root, version)
    known = {c["cgroup_path"] for c in doc["containers"]}
    for proc in doc["processes"]:
        path = proc.get("cgroup_path")
        if not path or proc.get("pod_uid"):
            continue
        rel = "/" + "/".join(s for s in path.split("/") if s and s not in (".", ".."))
        if rel == "/" or rel in known or not hostos.isdir(mount + rel):
            continue
        known.add(rel)
        doc["containers"].append(_container(mount, rel, version=version, gaps=gaps))


def collect_document(
    root: Path | str,
    *,
    top: int = 20,
    nvml_module: object | None = None,
    node_name: str | None = None,
    now: Callable[[], datetime] | None = None,
    kernel_log_window_s: int = kmsg.DEFAULT_WINDOW_S,
) -> dict[str, Any]:
    """The EvidenceBundle as a JSON-ready dict (``collected_at`` as ISO-8601 text).

    ``now``: the clock (an aware datetime); None reads the system clock (UTC) without
    importing ``datetime``.
    ``kernel_log_window_s``: how far back to keep kernel log records (0: do not read it).
    """
    started = time.perf_counter()
    moment: int | datetime  # microseconds since the epoch, or the clock's datetime
    if now is None:
        wall_ns = time.time_ns()
        collected_at = iso_utc(wall_ns)
        moment = wall_ns // 1000
    else:
        moment = now()
        collected_at = moment.isoformat()
    root_s = str(root).rstrip("/") or ""
    gaps = GapLog()
    page_size = hostos.sysconf("SC_PAGE_SIZE")
    doc: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION,
        "collector_version": __version__,
        "hostname": _hostname(root_s),
        "node_name": node_name or hostos.getenv("NODE_NAME") or None,
        "collected_at": collected_at,
        "host_root": str(root),
        "cgroup_version": None,
        "meminfo": None,
        "free": None,
        "pressure": None,
        "socket_memory_bytes": None,
        "pods": [],
        "containers": [],
    }
    _host_memory(root_s, doc, gaps, page_size)
    version = cgroups.detect_version(root_s)
    doc["cgroup_version"] = version
    if version is None:
        gaps.add(
            "cgroup:/sys/fs/cgroup",
            "no cgroup v2 mount or v1 memory controller found",
            "no_cgroup_memory",
        )
    else:
        _kube_cgroups(root_s, version, doc, gaps)
    gpus, gpu_procs, driver = nvml.read_gpus(nvml_module, gaps=gaps)
    processes, count = procfs.scan_processes(
        f"{root_s}/proc",
        top=top,
        always=frozenset(p["pid"] for p in gpu_procs),
        page_size=page_size,
        gaps=gaps,
    )
    by_pid = {p["pid"]: p for p in processes}
    for gp in gpu_procs:
        info = by_pid.get(gp["pid"])
        if info is None:
            gaps.add(
                f"procfs:/proc/{gp['pid']}",
                "GPU process not visible (the collector pod needs hostPID: true)",
                "gpu_process_hidden",
            )
        gp["command"] = info["command"] if info else None
        gp["pod_uid"] = info["pod_uid"] if info else None
        gp["container_id"] = info["container_id"] if info else None
    doc.update(processes=processes, process_count=count, gpus=gpus, gpu_processes=gpu_procs)
    doc["nvml_driver_version"] = driver
    doc["pod_gpu_memory"] = []  # dcgm-exporter's per-pod figures: the bot adds them, not the node
    doc["kernel_log"] = (
        kmsg.read_kernel_log(root_s, now=moment, gpus=gpus, gaps=gaps, window_s=kernel_log_window_s)
        if kernel_log_window_s > 0
        else None
    )
    if version is not None:
        _process_cgroups(root_s, version, doc, gaps)
    doc["gaps"] = gaps.items
    doc["duration_s"] = round(time.perf_counter() - started, 6)
    return doc


def collect(
    root: Path,
    *,
    top: int = 20,
    nvml: object | None = None,
    node_name: str | None = None,
    now: Callable[[], datetime] | None = None,
    kernel_log_window_s: int = kmsg.DEFAULT_WINDOW_S,
) -> EvidenceBundle:
    """Everything one collection sees under ``root``. Never raises on partial evidence.

    ``nvml=None`` imports the real ``pynvml`` lazily; its absence is a gap.
    """
    from bot.core.model.evidence import EvidenceBundle

    doc = collect_document(
        root,
        top=top,
        nvml_module=nvml,
        node_name=node_name,
        now=now,
        kernel_log_window_s=kernel_log_window_s,
    )
    return EvidenceBundle.model_validate(doc)
