"""What a stored evidence snapshot keeps of a node's processes (issue #25: a 5,000-process
node's snapshot was 187 KiB compressed, 171 KiB of it the process list).

Kept whole: every process outside pods (the ledger sums their anonymous memory per unit and
names each unit's top process) and every process that holds GPU memory. Pod processes: the
``KEEP_PER_CONTAINER`` largest of each container (by RSS, then PID), which covers what the
reports say about a pod (its top four processes by name, ``bot.core.diagnosis.consumers``). The rest
of each container is summarised in the process tail: how many processes were left out and
the sums of their RSS, anonymous, file and shared memory.

So a stored bundle analyses to the same diagnosis as the bundle captured
(``tests/store/test_snapshot_summary.py``).
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from bot.core.model.evidence import EvidenceBundle, ProcessMemory

#: the reports name a pod's top four processes; one container keeps at least those
KEEP_PER_CONTAINER = 4
#: the process tail's own format
TAIL_SCHEMA = 1


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class OmittedProcesses(_Frozen):
    """One container's processes left out of a stored bundle, summed."""

    pod_uid: str | None
    container_id: str | None
    cgroup_path: str | None
    processes: int
    rss_bytes: int
    rss_anon_bytes: int
    rss_file_bytes: int
    rss_shmem_bytes: int


class ProcessTail(_Frozen):
    schema_version: int = TAIL_SCHEMA
    kept_per_container: int = KEEP_PER_CONTAINER
    process_count: int
    containers: list[OmittedProcesses]


def _place(p: ProcessMemory) -> tuple[str, str]:
    return (p.pod_uid or "", p.container_id or "")


def summarize(bundle: EvidenceBundle) -> tuple[EvidenceBundle, ProcessTail | None]:
    """The bundle as stored, and its process tail (None: nothing left out)."""
    gpu_pids = {g.pid for g in bundle.gpu_processes}
    by_container: dict[tuple[str, str], list[ProcessMemory]] = {}
    kept: list[ProcessMemory] = []
    for p in bundle.processes:
        if (not p.pod_uid and not p.container_id) or p.pid in gpu_pids:
            kept.append(p)
        else:
            by_container.setdefault(_place(p), []).append(p)
    omitted: list[OmittedProcesses] = []
    for procs in by_container.values():
        procs.sort(key=lambda p: (-p.rss_bytes, p.pid))
        kept += procs[:KEEP_PER_CONTAINER]
        rest = procs[KEEP_PER_CONTAINER:]
        if rest:
            omitted.append(
                OmittedProcesses(
                    pod_uid=rest[0].pod_uid,
                    container_id=rest[0].container_id,
                    cgroup_path=rest[0].cgroup_path,
                    processes=len(rest),
                    rss_bytes=sum(p.rss_bytes for p in rest),
                    rss_anon_bytes=sum(p.rss_anon_bytes or 0 for p in rest),
                    rss_file_bytes=sum(p.rss_file_bytes or 0 for p in rest),
                    rss_shmem_bytes=sum(p.rss_shmem_bytes or 0 for p in rest),
                )
            )
    if not omitted:
        return bundle, None
    order = {id(p): i for i, p in enumerate(bundle.processes)}
    kept.sort(key=lambda p: order[id(p)])  # in the collector's order
    tail = ProcessTail(
        process_count=len(bundle.processes),
        containers=sorted(omitted, key=lambda o: (o.pod_uid or "", o.container_id or "")),
    )
    return bundle.model_copy(update={"processes": kept}), tail
