"""Attribution first: every byte of the node's RAM goes to one consumer. Pure: no I/O.

``host_consumers`` turns one bundle (joined to the API view by ``bot.core.diagnosis.attribution``)
into a list of ``Consumer`` rows, whoever owns the memory:

==================  ==========================================================  =========
cause               bytes                                                       culprit?
==================  ==========================================================  =========
host_memory_work.   per owner group (top controller, else the pod): the pods'   yes
                    working sets less their shmem (shmem is its own row)
system_process      per cgroup unit (``system.slice/x.service``), else per      yes
                    ``comm[pid]``: anon RSS (the unit's cgroup anon if larger)
kernel_slab         SUnreclaim                                                  yes
kernel_memory       PageTables + KernelStack + VmallocUsed + Percpu + sockets   yes
shmem               per pod (containers' memory.stat shmem), and ``host``:      yes
                    meminfo Shmem less the pods' part
hugepages           HugePages_Total x Hugepagesize (reserved, used or not)      yes
page_cache          Buffers + Cached - Shmem: reclaimable, never the culprit    no
unattributed        AnonPages no pod or kept process explains                   no
==================  ==========================================================  =========

Culprit rows are judged against the contract (``unreserved_bytes``): a pod row counts only
what its pods hold above their own memory requests (a pod without one: all of it; a pod's
shmem row takes the rest of the pod's excess); rows outside pods have no request, so all of
their bytes. ``kubelet_rank`` orders rows as the kubelet evicts.

``unattributed`` is not a culprit but it competes in the ranking: when it is larger than every
named consumer the verdict cannot name one (inconclusive). ``gpu_holders`` does the same per
GPU: each GPU's memory by pod (the pod key) or by orphan process (no pod).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from bot.core.diagnosis.attribution import Attribution, PodUsage
from bot.core.diagnosis.findings import VerdictCause
from bot.core.model.evidence import EvidenceBundle, GpuDevice, ProcessMemory

MEMINFO = "procfs:/proc/meminfo"
Params = dict[str, str | int | float]


@dataclass(frozen=True)
class Consumer:
    """One row of the attribution. ``culprit``: may be named as the cause of a shortage."""

    cause: VerdictCause | str
    subject: str
    bytes: int
    source: str
    culprit: bool = True
    params: Params = field(default_factory=dict)


def unreserved_bytes(c: Consumer) -> int:
    """What a consumer holds above its contract with the scheduler: a pod row's bytes above
    its pods' memory requests (each pod against its own request; a pod without one: all of
    it), summed over the row's pods; every consumer outside pods has no request, so all of
    its bytes. A pod inside its request is entitled to what it holds: 0."""
    if c.cause in ("host_memory_workload", "shmem") and "above_request_bytes" in c.params:
        above = c.params["above_request_bytes"]
        return int(above) if isinstance(above, int | float) else 0
    return c.bytes


def within_request_bytes(c: Consumer) -> int:
    """What a consumer holds inside its contract (``bytes - unreserved_bytes``)."""
    return max(0, c.bytes - unreserved_bytes(c))


def kubelet_rank(c: Consumer) -> tuple[int, int, int, int]:
    """Sort key in the kubelet's eviction order under memory pressure (``rankMemoryPressure``:
    usage above request first, then lower priority, then usage above request, most first),
    then by bytes held. Consumers outside pods have no request and no priority: above, 0."""
    above = unreserved_bytes(c)
    priority = c.params.get("priority", 0)
    return (
        0 if above > 0 else 1,
        int(priority) if isinstance(priority, int | float) else 0,
        -above,
        -c.bytes,
    )


@dataclass(frozen=True)
class GpuHolder:
    """Who holds one GPU's memory: a pod (``pod`` set) or a process of no pod.

    ``seen``: the process was found in ``/proc`` (so its cgroup proves it is in no pod). A
    GPU process the collector could not see (no ``hostPID``) is not called an orphan."""

    gpu: GpuDevice
    pod: str | None
    pid: int
    command: str
    bytes: int
    seen: bool = True

    @property
    def orphan(self) -> bool:
        return self.pod is None and self.seen


def _pod_shmem(p: PodUsage) -> int:
    return sum(c.mem.shmem_bytes or 0 for c in p.containers)


def _owner(p: PodUsage) -> tuple[str, str, str]:
    """(group key, owner kind, owner name): the top controller, else the pod itself."""
    pod = p.pod
    if pod is None or pod.top_owner is None:
        return (p.key, "Pod", pod.name if pod is not None else p.uid)
    owner = pod.top_owner
    return (f"{owner.kind}/{pod.namespace}/{owner.name}", owner.kind, owner.name)


def _process_names(procs: list[ProcessMemory], limit: int = 4) -> str:
    top = sorted(procs, key=lambda x: (-x.rss_bytes, x.pid))[:limit]
    return ", ".join(f"{x.command}[{x.pid}]" for x in top)


def _held(p: PodUsage) -> int:
    """A pod's row bytes: its working set less its shmem (shmem is its own row)."""
    return max(0, (p.working_set_bytes or 0) - _pod_shmem(p))


def _request(p: PodUsage) -> int:
    return p.pod.memory_request_bytes if p.pod is not None else 0


def _above(p: PodUsage) -> int:
    """The pod row's bytes above the pod's memory request (no request: all of them)."""
    return max(0, _held(p) - _request(p))


def _shmem_above(p: PodUsage) -> int:
    """The part of the pod's shmem above its request: what the working set (row + shmem)
    exceeds the request by, less what the pod row already counts."""
    return max(0, (p.working_set_bytes or 0) - _request(p)) - _above(p)


def _pod_rows(attr: Attribution) -> list[Consumer]:
    groups: dict[str, list[PodUsage]] = {}
    for usage in attr.pods.values():
        if usage.working_set_bytes is None:
            continue
        groups.setdefault(_owner(usage)[0], []).append(usage)
    rows: list[Consumer] = []
    for key, members in groups.items():
        members.sort(key=lambda p: (-(p.working_set_bytes or 0), p.key))
        top = members[0]
        total = sum(_held(p) for p in members)
        _, kind, name = _owner(top)
        container = max(top.containers, key=lambda c: c.mem.working_set_bytes or 0, default=None)
        pod = top.pod
        procs = attr.pod_processes.get(top.uid, [])
        params: Params = {
            "pod": top.key,
            "group": key,
            "owner_kind": kind,
            "owner_name": name,
            "pods_in_group": len(members),
            "group_bytes": total,
            "group_request_bytes": sum(p.pod.memory_request_bytes for p in members if p.pod),
            "above_request_bytes": sum(_above(p) for p in members),
            "group_working_set_bytes": sum(p.working_set_bytes or 0 for p in members),
            "group_shmem_bytes": sum(_pod_shmem(p) for p in members),
            "group_working_set_above_request_bytes": sum(
                max(0, (p.working_set_bytes or 0) - _request(p)) for p in members
            ),
            "pod_bytes": _held(top),
            "pod_above_request_bytes": max(0, (top.working_set_bytes or 0) - _request(top)),
            "pods_within_request": sum(1 for p in members if _request(p) and not _above(p)),
            "priority": min((p.pod.priority for p in members if p.pod), default=0),
            "working_set_bytes": top.working_set_bytes or 0,
            "request_bytes": pod.memory_request_bytes if pod is not None else 0,
            "limit_bytes": (container.mem.limit_bytes if container is not None else None)
            or (pod.memory_limit_bytes if pod is not None else None)
            or 0,
            "gpu_request": top.gpu_request,
            "shmem_bytes": _pod_shmem(top),
            "processes": _process_names(procs),
        }
        if container is not None:
            params["container"] = container.name
            params["container_working_set_bytes"] = container.mem.working_set_bytes or 0
        rows.append(Consumer("host_memory_workload", top.key, total, top.source, True, params))
    return rows


def _unit(proc: ProcessMemory) -> str:
    """The process's cgroup unit (``system.slice/x.service``), else ``comm[pid]``."""
    path = "/".join(s for s in (proc.cgroup_path or "").split("/") if s and s not in (".", ".."))
    leaf = path.rsplit("/", 1)[-1]
    if path and "." in leaf and not leaf.endswith(".slice"):
        return path
    return f"{proc.command}[{proc.pid}]"


def _system_rows(attr: Attribution) -> list[Consumer]:
    units: dict[str, list[ProcessMemory]] = {}
    for proc in attr.system_processes:
        units.setdefault(_unit(proc), []).append(proc)
    cgroups = {
        "/".join(s for s in c.mem.cgroup_path.split("/") if s and s not in (".", "..")): c
        for c in attr.containers
        if c.pod is None and c.mem.pod_uid is None
    }
    rows: list[Consumer] = []
    for unit, procs in units.items():
        anon = sum(p.rss_anon_bytes if p.rss_anon_bytes is not None else p.rss_bytes for p in procs)
        cg = cgroups.get(unit)
        if cg is not None and cg.mem.anon_bytes is not None:
            anon = max(anon, cg.mem.anon_bytes)
        top = max(procs, key=lambda p: (p.rss_bytes, -p.pid))
        params: Params = {
            "unit": unit,
            "pid": top.pid,
            "command": top.command,
            "cmdline": top.cmdline[:120],
            "process_count": len(procs),
            "processes": _process_names(procs),
            "systemd_unit": unit.rsplit("/", 1)[-1] if unit.endswith(".service") else "",
        }
        rows.append(
            Consumer("system_process", unit, anon, f"procfs:/proc/{top.pid}/status", True, params)
        )
    return rows


def _kernel_rows(bundle: EvidenceBundle, node: str) -> list[Consumer]:
    mi = bundle.meminfo
    rows: list[Consumer] = []
    if mi is None:
        return rows
    if mi.s_unreclaim_bytes:
        slab: Params = {"s_unreclaim_bytes": mi.s_unreclaim_bytes}
        if bundle.slab_caches:  # which caches, when /proc/slabinfo was readable
            top = bundle.slab_caches[0]
            slab.update(
                top_cache=top.name,
                top_cache_bytes=top.bytes,
                top_caches=", ".join(c.name for c in bundle.slab_caches[:5]),
            )
        rows.append(Consumer("kernel_slab", node, mi.s_unreclaim_bytes, MEMINFO, True, slab))
    parts = {
        "page_tables_bytes": mi.page_tables_bytes or 0,
        "kernel_stack_bytes": mi.kernel_stack_bytes or 0,
        "vmalloc_used_bytes": mi.vmalloc_used_bytes or 0,
        "percpu_bytes": mi.percpu_bytes or 0,
        "socket_memory_bytes": bundle.socket_memory_bytes or 0,
    }
    total = sum(parts.values())
    if total:
        rows.append(Consumer("kernel_memory", node, total, MEMINFO, True, dict(parts)))
    if mi.hugepages_total and mi.hugepage_size_bytes:
        reserved = mi.hugepages_total * mi.hugepage_size_bytes
        free = (mi.hugepages_free or 0) * mi.hugepage_size_bytes
        rows.append(
            Consumer(
                "hugepages",
                node,
                reserved,
                MEMINFO,
                True,
                {
                    "hugepages_total": mi.hugepages_total,
                    "hugepage_size_bytes": mi.hugepage_size_bytes,
                    "hugepages_free_bytes": free,
                    "reserved_bytes": reserved,
                },
            )
        )
    return rows


def _shmem_rows(bundle: EvidenceBundle, attr: Attribution) -> list[Consumer]:
    rows: list[Consumer] = []
    in_pods = 0
    for usage in attr.pods.values():
        shmem = _pod_shmem(usage)
        if shmem <= 0:
            continue
        in_pods += shmem
        params: Params = {
            "pod": usage.key,
            "shmem_bytes": shmem,
            "working_set_bytes": usage.working_set_bytes or 0,
            "above_request_bytes": _shmem_above(usage),
            "priority": usage.pod.priority if usage.pod is not None else 0,
        }
        rows.append(Consumer("shmem", usage.key, shmem, usage.source, True, params))
    mi = bundle.meminfo
    if mi is not None and mi.shmem_bytes:
        host = max(0, mi.shmem_bytes - in_pods)
        if host:
            rows.append(Consumer("shmem", "host", host, MEMINFO, True, {"shmem_bytes": host}))
    return rows


def _page_cache_and_unattributed(
    bundle: EvidenceBundle, attr: Attribution, rows: list[Consumer], node: str
) -> list[Consumer]:
    mi = bundle.meminfo
    out: list[Consumer] = []
    if mi is None:
        return out
    cache = max(0, mi.buffers_bytes + mi.cached_bytes - (mi.shmem_bytes or 0))
    if cache:
        out.append(Consumer("page_cache", node, cache, MEMINFO, False, {"bytes": cache}))
    anon = mi.anon_pages_bytes
    if anon is None and mi.active_anon_bytes is not None and mi.inactive_anon_bytes is not None:
        anon = mi.active_anon_bytes + mi.inactive_anon_bytes
    if anon is not None:
        explained = sum(
            r.bytes for r in rows if r.cause in ("host_memory_workload", "system_process")
        )
        left = max(0, anon - explained)
        if left:
            out.append(Consumer("unattributed", node, left, MEMINFO, False, {"bytes": left}))
    return out


def host_consumers(bundle: EvidenceBundle, attr: Attribution, node: str) -> list[Consumer]:
    """Every consumer of host RAM, biggest first (ties by cause then subject: deterministic)."""
    rows = [*_pod_rows(attr), *_system_rows(attr)]
    rows += _kernel_rows(bundle, node)
    rows += _shmem_rows(bundle, attr)
    rows += _page_cache_and_unattributed(bundle, attr, rows, node)
    return sorted(rows, key=lambda r: (-r.bytes, str(r.cause), r.subject))


def gpu_holders(bundle: EvidenceBundle, attr: Attribution) -> dict[int, list[GpuHolder]]:
    """Per GPU index: holders of its memory, biggest first. A pod's processes on one GPU are
    summed under the pod; an orphan process (no pod) is its own holder."""
    devices = {g.index: g for g in bundle.gpus}
    seen = {p.pid for p in bundle.processes}
    out: dict[int, dict[str, GpuHolder]] = {}
    placed = [(uid, gp) for uid, procs in attr.gpu_processes_by_pod.items() for gp in procs] + [
        (None, gp) for gp in attr.unmapped_gpu_processes
    ]
    for uid, gp in placed:
        gpu = devices.get(gp.gpu_index)
        if gpu is None:
            continue
        usage = attr.pods.get(uid) if uid else None
        pod = usage.key if usage is not None else (f"pod-uid/{uid}" if uid else None)
        key = f"pod:{pod}" if pod is not None else f"pid:{gp.pid}"
        held = out.setdefault(gp.gpu_index, {})
        prior = held.get(key)
        used = gp.used_gpu_memory_bytes or 0
        if prior is None:
            held[key] = GpuHolder(gpu, pod, gp.pid, gp.command or "", used, gp.pid in seen)
        else:
            held[key] = GpuHolder(
                gpu, pod, prior.pid, prior.command, prior.bytes + used, prior.seen
            )
    return {i: sorted(h.values(), key=lambda x: (-x.bytes, x.pid)) for i, h in sorted(out.items())}
