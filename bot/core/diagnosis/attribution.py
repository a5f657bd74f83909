"""Join what the node saw (cgroups, processes, GPU processes) to the pods the API knows.

Keys: the pod UID (dashed, lower case; systemd paths use underscores, normalised here) and
the 64-hex runtime container id. Every join is a dict lookup, so the cost is linear in the
bundle (110 pods, 5,000 processes, 8 GPUs is milliseconds). Pure: no I/O.

A GPU process whose pod UID (from its cgroup path) the API view does not know, when there
is a view, belongs to no pod: it is left over in the scope of a pod that is gone (the
container was killed, the process survived) and is listed in ``unmapped_gpu_processes``
(an orphan). Host memory of such cgroups stays under the UID (the ledger names it).

Per pod, memory is taken from the most detailed source available: the sum of its containers'
cgroups (with anon / file split), else the pod cgroup, else metrics.k8s.io.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from bot.core.model.cluster import ClusterView, ContainerInfo, PodInfo
from bot.core.model.evidence import ContainerMemory, EvidenceBundle, GpuProcess, ProcessMemory


def norm_uid(uid: str | None) -> str | None:
    return uid.replace("_", "-").lower() if uid else None


@dataclass(frozen=True)
class ContainerUsage:
    mem: ContainerMemory
    pod: PodInfo | None
    info: ContainerInfo | None

    @property
    def name(self) -> str:
        if self.info is not None:
            return self.info.name
        return (self.mem.container_id or "?")[:12]

    @property
    def active_file_bytes(self) -> int | None:
        file_b, inactive = self.mem.file_bytes, self.mem.inactive_file_bytes
        if file_b is None or inactive is None:
            return None
        return max(0, file_b - inactive)


@dataclass(frozen=True)
class PodUsage:
    """One pod's memory as the node saw it. ``working_set_bytes`` is the kubelet's figure."""

    uid: str
    pod: PodInfo | None
    working_set_bytes: int | None
    anon_bytes: int | None
    active_file_bytes: int | None
    kernel_bytes: int | None
    source: str
    containers: tuple[ContainerUsage, ...] = ()

    @property
    def key(self) -> str:
        return self.pod.key if self.pod is not None else f"pod-uid/{self.uid}"

    @property
    def gpu_request(self) -> int:
        return self.pod.gpu_request if self.pod is not None else 0


@dataclass(frozen=True)
class Attribution:
    pods: dict[str, PodUsage] = field(default_factory=dict)
    view_pods: dict[str, PodInfo] = field(default_factory=dict)
    containers: list[ContainerUsage] = field(default_factory=list)
    pod_processes: dict[str, list[ProcessMemory]] = field(default_factory=dict)
    system_processes: list[ProcessMemory] = field(default_factory=list)
    gpu_processes_by_pod: dict[str, list[GpuProcess]] = field(default_factory=dict)
    unmapped_gpu_processes: list[GpuProcess] = field(default_factory=list)


def _sum(values: list[int | None]) -> int | None:
    known = [v for v in values if v is not None]
    return sum(known) if known and len(known) == len(values) else None


def _pod_from_containers(uid: str, pod: PodInfo | None, items: list[ContainerUsage]) -> PodUsage:
    ws = _sum([c.mem.working_set_bytes for c in items])
    return PodUsage(
        uid=uid,
        pod=pod,
        working_set_bytes=ws,
        anon_bytes=_sum([c.mem.anon_bytes for c in items]),
        active_file_bytes=_sum([c.active_file_bytes for c in items]),
        kernel_bytes=_sum([c.mem.kernel_bytes for c in items]),
        source=f"cgroup:{items[0].mem.cgroup_path}" if len(items) == 1 else "cgroup:containers",
        containers=tuple(items),
    )


def attribute(bundle: EvidenceBundle, view: ClusterView | None) -> Attribution:
    """Index the view, then place every container, process and GPU process."""
    view_pods: dict[str, PodInfo] = {}
    by_container_id: dict[str, tuple[PodInfo, ContainerInfo]] = {}
    for pod in view.pods if view is not None else []:
        uid = norm_uid(pod.uid)
        if uid:
            view_pods[uid] = pod
        for info in pod.containers:
            if info.container_id:
                by_container_id[info.container_id.lower()] = (pod, info)

    # thousands of processes share a few hundred (pod UID, container id) pairs
    located: dict[tuple[str | None, str | None], str | None] = {}

    def locate(uid: str | None, cid: str | None) -> str | None:
        try:
            return located[uid, cid]
        except KeyError:
            hit = by_container_id.get(cid.lower()) if cid else None
            found = located[uid, cid] = norm_uid(hit[0].uid if hit else uid)
            return found

    grouped: dict[str, list[ContainerUsage]] = {}
    containers: list[ContainerUsage] = []
    for mem in bundle.containers:
        uid = locate(mem.pod_uid, mem.container_id)
        hit = by_container_id.get((mem.container_id or "").lower())
        usage = ContainerUsage(
            mem=mem,
            pod=view_pods.get(uid) if uid else None,
            info=hit[1] if hit else None,
        )
        containers.append(usage)
        if uid:
            grouped.setdefault(uid, []).append(usage)

    pods: dict[str, PodUsage] = {
        uid: _pod_from_containers(uid, view_pods.get(uid), items) for uid, items in grouped.items()
    }
    for pc in bundle.pods:
        uid = norm_uid(pc.pod_uid)
        if uid and (uid not in pods or pods[uid].working_set_bytes is None):
            pods[uid] = PodUsage(
                uid=uid,
                pod=view_pods.get(uid),
                working_set_bytes=pc.working_set_bytes,
                anon_bytes=None,
                active_file_bytes=None,
                kernel_bytes=None,
                source=f"cgroup:{pc.cgroup_path}",
                containers=pods[uid].containers if uid in pods else (),
            )
    if view is not None and view.metrics:
        by_key = {p.key: uid for uid, p in view_pods.items()}
        for m in view.metrics:
            uid = by_key.get(f"{m.namespace}/{m.name}")
            if uid and uid not in pods:
                pods[uid] = PodUsage(
                    uid=uid,
                    pod=view_pods[uid],
                    working_set_bytes=m.memory_working_set_bytes,
                    anon_bytes=None,
                    active_file_bytes=None,
                    kernel_bytes=None,
                    source=f"k8s:metrics/{m.namespace}/{m.name}",
                )

    pod_processes: dict[str, list[ProcessMemory]] = {}
    system: list[ProcessMemory] = []
    by_pid: dict[int, str] = {}
    for proc in bundle.processes:
        uid = locate(proc.pod_uid, proc.container_id)
        if uid:
            pod_processes.setdefault(uid, []).append(proc)
            by_pid[proc.pid] = uid
        else:
            system.append(proc)

    gpu_by_pod: dict[str, list[GpuProcess]] = {}
    unmapped: list[GpuProcess] = []
    for gp in bundle.gpu_processes:
        uid = locate(gp.pod_uid, gp.container_id) or by_pid.get(gp.pid)
        if uid and (view is None or uid in view_pods):
            gpu_by_pod.setdefault(uid, []).append(gp)
        else:
            unmapped.append(gp)

    return Attribution(
        pods=pods,
        view_pods=view_pods,
        containers=containers,
        pod_processes=pod_processes,
        system_processes=system,
        gpu_processes_by_pod=gpu_by_pod,
        unmapped_gpu_processes=unmapped,
    )
