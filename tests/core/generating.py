"""Generated nodes with one culprit planted by construction, over random background load.

``plant(cls, rng)`` builds an ``EvidenceBundle`` + ``ClusterView`` whose memory has exactly one
culprit of class ``cls`` (``CLASSES``) and returns the cause and subject a correct verdict
names. The background is random (node size, GPU count, training pods, other pods and owner
groups, system daemons, kernel memory, page cache, host shmem, PSI, events) but bounded so
that, by construction, nothing else explains the problem:

- host classes (``pod``, ``gpu_training``, ``system_process``, ``kernel_slab``,
  ``kernel_memory``, ``shmem_pod``, ``shmem_host``, ``hugepages``): the node is short
  (MemAvailable 0.5-4% of RAM, PSI stalls, sometimes a SystemOOM event) and the culprit holds
  12-60% of RAM while every other consumer (an owner group counts as one) holds at most 80%
  of the culprit; a pod culprit may be a group of replicas (subject: the biggest one);
  some nodes carry evidence gaps (they may lower confidence, never the answer);
- local classes (``container_limit``, ``gpu_memory``, ``gpu_orphan``) and ``healthy``: the
  node has headroom (MemAvailable >= 20%); the culprit is a container at its own limit, one
  exhausted GPU (a pod's process) or a GPU held by a process of no pod; ``healthy`` only looks
  full to ``free`` (little MemFree, much reclaimable page cache).

The meminfo is consistent: MemTotal = MemFree + Buffers + Cached (reclaimable cache + all
shmem) + AnonPages + Slab + PageTables + KernelStack + Percpu + VmallocUsed + huge pages.
Used by ``test_verdict_generator.py`` (hypothesis draws the ``random.Random``) and by
``bench/verdicts.py`` (500 nodes, fixed seed). Pure: no I/O.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from datetime import UTC, datetime

from bot.core.cluster import (
    ClusterView,
    ContainerInfo,
    EventInfo,
    NodeInfo,
    OwnerRef,
    PodInfo,
    ResourceAllocation,
)
from bot.core.evidence import (
    ContainerMemory,
    EvidenceBundle,
    Gap,
    GpuDevice,
    GpuProcess,
    MemInfo,
    MemoryPressure,
    PressureLine,
    ProcessMemory,
)
from bot.core.memory import free_figures

GI = 1024**3
MI = 1024**2
NODE = "gen-node-01"
AT = datetime(2026, 3, 14, 9, 30, tzinfo=UTC)
HOST_CLASSES = (
    "pod",
    "gpu_training",
    "system_process",
    "kernel_slab",
    "kernel_memory",
    "shmem_pod",
    "shmem_host",
    "hugepages",
)
LOCAL_CLASSES = ("container_limit", "gpu_memory", "gpu_orphan", "healthy")
CLASSES = HOST_CLASSES + LOCAL_CLASSES
CAUSE = {
    "pod": "host_memory_workload",
    "gpu_training": "host_memory_workload",
    "system_process": "system_process",
    "kernel_slab": "kernel_slab",
    "kernel_memory": "kernel_memory",
    "shmem_pod": "shmem",
    "shmem_host": "shmem",
    "hugepages": "hugepages",
    "container_limit": "container_limit",
    "gpu_memory": "gpu_memory",
    "gpu_orphan": "gpu_orphan",
    "healthy": "healthy",
}
_DAEMONS = ("kubelet", "containerd", "nvidia-persistenced", "nv-hostengine", "sshd", "rsyslogd")
_HOGS = ("nv-hostengine", "fluent-bit", "backup-agent", "etl-cron", "clamd", "prometheus")


@dataclass(frozen=True)
class Planted:
    cls: str
    cause: str
    subject: str
    bundle: EvidenceBundle
    view: ClusterView


@dataclass
class _Node:
    rng: random.Random
    total: int
    pods: list[PodInfo] = field(default_factory=list)
    containers: list[ContainerMemory] = field(default_factory=list)
    processes: list[ProcessMemory] = field(default_factory=list)
    gpus: list[GpuDevice] = field(default_factory=list)
    gpu_procs: list[GpuProcess] = field(default_factory=list)
    events: list[EventInfo] = field(default_factory=list)
    next_pid: int = 1000
    next_uid: int = 1

    def pid(self) -> int:
        self.next_pid += self.rng.randint(1, 97)
        return self.next_pid

    def anon(self) -> int:
        return sum(c.anon_bytes or 0 for c in self.containers) + sum(
            p.rss_anon_bytes or 0 for p in self.processes if p.pod_uid is None
        )

    def pod_shmem(self) -> int:
        return sum(c.shmem_bytes or 0 for c in self.containers)


def _pod(
    n: _Node,
    name: str,
    ws: int,
    *,
    ns: str = "ml",
    gpu: int = 0,
    limit: int | None = None,
    request: int | None = None,
    owner: tuple[str, str] | None = None,
    shmem: int = 0,
    oom_kills: int = 0,
    procs: list[tuple[str, int]] | None = None,
) -> PodInfo:
    """A pod with one container whose cgroup holds ``ws`` (anon ``ws - shmem`` + shmem)."""
    serial = n.next_uid  # ids and names are unique by construction, not by chance
    n.next_uid += 1
    uid = f"{serial:08x}-0000-4000-8000-{n.rng.getrandbits(48):012x}"
    cid = f"{serial:08x}{n.rng.getrandbits(224):056x}"
    request = request if request is not None else min(ws, limit or ws) // 2
    reqs = {"memory": f"{max(1, request // MI)}Mi"}
    lims = {"memory": f"{limit // MI}Mi"} if limit else {}
    if gpu:
        reqs["nvidia.com/gpu"] = lims["nvidia.com/gpu"] = str(gpu)
    kind, owner_name = owner if owner is not None else ("Deployment", name.rsplit("-", 2)[0])
    owners = [] if kind == "Pod" else [OwnerRef(kind=kind, name=owner_name)]
    qos = "burstable" if request else "besteffort"
    pod = PodInfo(
        namespace=ns,
        name=name,
        uid=uid,
        node_name=NODE,
        qos_class=qos,
        owners=owners,
        containers=[ContainerInfo(name="main", container_id=cid, requests=reqs, limits=lims)],
        memory_request_bytes=(request // MI) * MI,
        memory_limit_bytes=(limit // MI) * MI if limit else None,
        gpu_request=gpu,
        is_daemonset=kind == "DaemonSet",
        has_emptydir=shmem > 0,
    )
    path = f"/kubepods.slice/kubepods-{qos}.slice/kubepods-{qos}-pod{uid.replace('-', '_')}.slice"
    leaf = f"{path}/cri-containerd-{cid}.scope"
    n.pods.append(pod)
    n.containers.append(
        ContainerMemory(
            cgroup_path=leaf,
            pod_uid=uid,
            container_id=cid,
            runtime="containerd",
            qos=qos,
            usage_bytes=ws,
            limit_bytes=(limit // MI) * MI if limit else None,
            working_set_bytes=ws,
            anon_bytes=ws - shmem,
            file_bytes=shmem,
            shmem_bytes=shmem,
            inactive_file_bytes=0,
            kernel_bytes=0,
            oom_events=oom_kills,
            oom_kill_events=oom_kills,
        )
    )
    for comm, rss in procs or [("python", ws - shmem)]:
        n.processes.append(
            ProcessMemory(
                pid=n.pid(),
                command=comm,
                cmdline=comm,
                rss_bytes=rss,
                rss_anon_bytes=rss,
                pod_uid=uid,
                container_id=cid,
                cgroup_path=leaf,
            )
        )
    return pod


def _system(n: _Node, comm: str, rss: int, cgroup: str | None) -> ProcessMemory:
    proc = ProcessMemory(
        pid=n.pid(),
        command=comm,
        cmdline=f"/usr/bin/{comm}",
        rss_bytes=rss,
        rss_anon_bytes=rss,
        cgroup_path=cgroup,
    )
    n.processes.append(proc)
    return proc


def _gpus(n: _Node, count: int, train: PodInfo | None, *, max_share: float = 0.85) -> None:
    for i in range(count):
        total = 80 * GI
        used = int(total * n.rng.uniform(0.05, max_share))
        n.gpus.append(
            GpuDevice(
                index=i,
                uuid=f"GPU-{n.rng.getrandbits(32):08x}-{i:04d}-4000-8000-{n.rng.getrandbits(48):012x}",
                name="NVIDIA H100 80GB HBM3",
                memory_total_bytes=total,
                memory_used_bytes=used,
                memory_free_bytes=total - used,
            )
        )
        if train is not None:
            proc = next(p for p in n.processes if p.pod_uid == train.uid)
            n.gpu_procs.append(
                GpuProcess(
                    gpu_index=i,
                    gpu_uuid=n.gpus[-1].uuid,
                    pid=proc.pid,
                    used_gpu_memory_bytes=used - 512 * MI,
                    command=proc.command,
                    pod_uid=train.uid,
                    container_id=train.containers[0].container_id,
                )
            )


def _set_gpu(n: _Node, index: int, used: int) -> GpuDevice:
    old = n.gpus[index]
    new = old.model_copy(
        update={"memory_used_bytes": used, "memory_free_bytes": old.memory_total_bytes - used}
    )
    n.gpus[index] = new
    return new


def _background_pods(n: _Node, budget: int, cap: int, *, limited: bool = True) -> None:
    """Fill ``budget`` bytes with pods (owner groups of 1-3 replicas), each group <= ``cap``."""
    teams = ("etl", "feature-store", "serving", "notebooks", "labeling", "monitoring")
    k = 0
    while budget > 256 * MI:
        group_cap = min(budget, cap)
        group = int(group_cap * n.rng.uniform(0.3, 1.0)) if budget > cap else budget
        replicas = n.rng.randint(1, 3)
        app = f"{n.rng.choice(teams)}-{k}"
        kind = n.rng.choice(("Deployment", "Deployment", "StatefulSet", "Pod"))
        for r in range(replicas):
            ws = max(64 * MI, group // replicas)
            limit = int(ws / n.rng.uniform(0.5, 0.8)) if limited and n.rng.random() < 0.8 else None
            name = f"{app}-{n.next_uid:05x}-{r}" if kind != "StatefulSet" else f"{app}-{r}"
            owner = (kind, app) if kind != "Pod" else ("Pod", name)
            _pod(n, name, ws, ns=n.rng.choice(("data", "ml", "tools")), limit=limit, owner=owner)
        budget -= group
        k += 1


def _daemons(n: _Node) -> None:
    for name in ("dcgm-exporter", "node-exporter", "kube-proxy"):
        ws = n.rng.randint(100, 900) * MI
        _pod(
            n,
            f"{name}-{n.next_uid:05x}",
            ws,
            ns="kube-system",
            limit=2 * ws,
            owner=("DaemonSet", name),
        )
    for comm in n.rng.sample(_DAEMONS, 3):
        _system(n, comm, n.rng.randint(50, 600) * MI, f"/system.slice/{comm}.service")


@dataclass
class _Kernel:
    s_unreclaim: int
    s_reclaimable: int
    page_tables: int
    stacks: int
    percpu: int
    vmalloc: int
    host_shmem: int
    hugepages_total: int = 0
    hugepage_size: int = 2 * MI


def _kernel(n: _Node) -> _Kernel:
    t, r = n.total, n.rng
    return _Kernel(
        s_unreclaim=int(t * r.uniform(0.005, 0.03)),
        s_reclaimable=int(t * r.uniform(0.002, 0.01)),
        page_tables=int(t * r.uniform(0.001, 0.006)),
        stacks=int(t * r.uniform(0.0005, 0.002)),
        percpu=int(t * r.uniform(0.0002, 0.001)),
        vmalloc=int(t * r.uniform(0.001, 0.004)),
        host_shmem=int(t * r.uniform(0.0005, 0.004)),
    )


def _kernel_bytes(k: _Kernel) -> int:
    return k.s_unreclaim + k.s_reclaimable + k.page_tables + k.stacks + k.percpu + k.vmalloc


def _finish(n: _Node, k: _Kernel, *, pressured: bool, unattributed: int = 0) -> EvidenceBundle:
    """meminfo that adds up, and the bundle; MemFree + reclaimable cache fill the rest."""
    r, t = n.rng, n.total
    shmem = k.host_shmem + n.pod_shmem()
    huge = k.hugepages_total * k.hugepage_size
    anon = n.anon() + unattributed
    used = anon + shmem + _kernel_bytes(k) + huge
    left = t - used
    assert left > 0, "the generator overfilled the node"
    if pressured:
        free = int(left * r.uniform(0.2, 0.6))
    elif r.random() < 0.5:
        free = int(left * r.uniform(0.05, 0.2))  # looks full to `free`, cache is reclaimable
    else:
        free = int(left * r.uniform(0.4, 0.9))
    buffers = int((left - free) * 0.02)
    cache = left - free - buffers
    available = free + cache + k.s_reclaimable
    mi = MemInfo(
        mem_total_bytes=t,
        mem_free_bytes=free,
        mem_available_bytes=available,
        buffers_bytes=buffers,
        cached_bytes=cache + shmem,
        anon_pages_bytes=anon,
        active_anon_bytes=int(anon * 0.9),
        inactive_anon_bytes=anon - int(anon * 0.9),
        shmem_bytes=shmem,
        slab_bytes=k.s_unreclaim + k.s_reclaimable,
        s_reclaimable_bytes=k.s_reclaimable,
        s_unreclaim_bytes=k.s_unreclaim,
        k_reclaimable_bytes=k.s_reclaimable,
        kernel_stack_bytes=k.stacks,
        page_tables_bytes=k.page_tables,
        vmalloc_used_bytes=k.vmalloc,
        percpu_bytes=k.percpu,
        hugepages_total=k.hugepages_total,
        hugepages_free=k.hugepages_total // 3 if k.hugepages_total else 0,
        hugepage_size_bytes=k.hugepage_size,
        hugetlb_bytes=huge,
        swap_total_bytes=0,
        swap_free_bytes=0,
    )
    some = r.uniform(12, 60) if pressured else r.uniform(0, 2)
    full = r.uniform(5, 25) if pressured else r.uniform(0, 0.5)

    def line(v: float) -> PressureLine:
        return PressureLine(avg10=v, avg60=v * 0.8, avg300=v * 0.5, total_us=10**9)

    return EvidenceBundle(
        collector_version="gen",
        hostname=NODE,
        node_name=NODE,
        collected_at=AT,
        cgroup_version=2,
        meminfo=mi,
        free=free_figures(mi),
        pressure=MemoryPressure(some=line(some), full=line(full)),
        socket_memory_bytes=r.randint(1, 200) * MI,
        containers=list(n.containers),
        processes=list(n.processes),
        process_count=len(n.processes) + r.randint(100, 2000),
        gpus=list(n.gpus),
        gpu_processes=list(n.gpu_procs),
        nvml_driver_version="550.90.07",
    )


def _view(n: _Node) -> ClusterView:
    alloc = int(n.total * 0.95) // MI * MI
    req = sum(p.memory_request_bytes for p in n.pods)
    lim = sum(p.memory_limit_bytes or 0 for p in n.pods)
    gpus = sum(p.gpu_request for p in n.pods)
    rows = [
        ResourceAllocation(
            resource="memory",
            requests=f"{req // MI}Mi",
            limits=f"{lim // MI}Mi",
            requests_value=req,
            limits_value=lim,
            allocatable_value=alloc,
            requests_percent=int(req * 100 / alloc),
            limits_percent=int(lim * 100 / alloc),
        ),
        ResourceAllocation(
            resource="nvidia.com/gpu",
            requests=str(gpus),
            limits=str(gpus),
            requests_value=gpus,
            limits_value=gpus,
            allocatable_value=len(n.gpus),
        ),
    ]
    node = NodeInfo(
        name=NODE,
        allocatable={"memory": f"{alloc // MI}Mi", "nvidia.com/gpu": str(len(n.gpus))},
        capacity={"memory": f"{n.total // MI}Mi", "nvidia.com/gpu": str(len(n.gpus))},
    )
    return ClusterView(node=node, pods=list(n.pods), events=list(n.events), allocated=rows)


def _training(n: _Node, ws: int, *, limit: bool = True, name: str = "train-0") -> PodInfo:
    lim = int(ws / n.rng.uniform(0.5, 0.8)) if limit else None
    return _pod(n, name, ws, gpu=n.rng.choice((4, 8)), limit=lim, owner=("StatefulSet", "train"))


def plant(cls: str, rng: random.Random) -> Planted:
    """One node with a culprit of class ``cls`` (see the module docstring)."""
    if cls not in CLASSES:
        raise ValueError(f"unknown class {cls!r}; one of {', '.join(CLASSES)}")
    n = _Node(rng=rng, total=rng.randint(128, 2048) * GI)
    t = n.total
    k = _kernel(n)
    _daemons(n)
    pressured = cls in HOST_CLASSES
    subject = NODE
    if pressured:
        c = int(t * rng.uniform(0.12, 0.60))
        cap = int(c * rng.uniform(0.2, 0.8))
        gpu_count = rng.choice((0, 4, 8))
        train = None
        if cls == "gpu_training":
            shm = int(c * rng.uniform(0.0, 0.08))
            workers = rng.randint(4, 16)
            main = int(c * 0.25)
            procs = [("python", main)] + [("pt_data_worker", (c - main) // workers)] * workers
            train = _pod(
                n,
                "train-0",
                c + shm,
                gpu=8,
                limit=int((c + shm) / rng.uniform(0.7, 0.95)) if rng.random() < 0.3 else None,
                request=int(c * rng.uniform(0.05, 0.3)),
                owner=("StatefulSet", "train"),
                shmem=shm,
                procs=procs,
            )
            subject = train.key
            gpu_count = 8
        elif gpu_count:
            train = _training(n, int(min(cap, t * 0.06) * rng.uniform(0.3, 1.0)))
        _gpus(n, gpu_count, train)
        if cls == "pod":
            replicas = rng.randint(1, 3)
            weights = sorted((rng.uniform(0.5, 1.0) for _ in range(replicas)), reverse=True)
            weights[0] += 0.1  # the biggest replica is unique: it is the subject
            ns = rng.choice(("data", "ml"))
            keys = []
            for r, w in enumerate(weights):
                ws = int(c * w / sum(weights))
                limit = int(ws / rng.uniform(0.9, 1.0)) if rng.random() < 0.5 else None
                name = f"preprocess-{rng.getrandbits(20):05x}-{r}"
                keys.append(_pod(n, name, ws, limit=limit, ns=ns, owner=("Deployment", "prep")).key)
            subject = keys[0]
        elif cls == "system_process":
            comm = rng.choice(_HOGS)
            unit = rng.random() < 0.7
            cg: str | None = f"/system.slice/{comm}.service" if unit else "/"
            proc = _system(n, comm, c, cg)
            subject = f"system.slice/{comm}.service" if unit else f"{comm}[{proc.pid}]"
        elif cls == "kernel_slab":
            k.s_unreclaim = c
        elif cls == "kernel_memory":
            k.page_tables = int(c * rng.uniform(0.6, 0.9))
            k.vmalloc = c - k.page_tables - k.stacks - k.percpu
        elif cls == "shmem_pod":
            p = _pod(
                n,
                f"loader-{rng.getrandbits(20):05x}-s",
                c + int(t * 0.005),
                shmem=c,
                owner=("Deployment", "loader"),
                limit=None,
            )
            subject = p.key
        elif cls == "shmem_host":
            k.host_shmem = c
            subject = "host"
        elif cls == "hugepages":
            k.hugepage_size = rng.choice((2 * MI, GI))
            k.hugepages_total = c // k.hugepage_size
        used = n.anon() + n.pod_shmem() + k.host_shmem + _kernel_bytes(k)
        used += k.hugepages_total * k.hugepage_size
        left_target = int(t * rng.uniform(0.005, 0.035))
        noise = int(t * rng.uniform(0.0, 0.03))
        _background_pods(n, t - used - left_target - noise, cap, limited=True)
        if rng.random() < 0.5:
            n.events.append(
                EventInfo(
                    involved_kind="Node",
                    involved_name=NODE,
                    reason="SystemOOM",
                    type="Warning",
                    message="System OOM encountered",
                )
            )
        bundle = _gaps(_finish(n, k, pressured=True, unattributed=noise), rng)
        return Planted(cls, CAUSE[cls], subject, bundle, _view(n))
    gpu_count = 0 if cls == "container_limit" and rng.random() < 0.3 else rng.choice((4, 8))
    train = _training(n, int(t * rng.uniform(0.02, 0.08))) if gpu_count else None
    _gpus(n, gpu_count, train)
    _background_pods(n, int(t * rng.uniform(0.05, 0.35)), int(t * 0.08), limited=True)
    if cls == "container_limit":
        limit = int(t * rng.uniform(0.01, 0.06))
        kills = rng.choice((0, 1, 3))
        ws = (
            int(limit * rng.uniform(0.955, 1.0))
            if kills == 0 or rng.random() < 0.5
            else int(limit * 0.6)
        )
        p = _pod(
            n,
            f"feature-loader-{rng.getrandbits(20):05x}-q",
            ws,
            limit=limit,
            oom_kills=kills,
            owner=("Deployment", "feature-loader"),
        )
        subject = p.key
    elif cls == "gpu_memory":
        assert train is not None
        i = rng.randrange(gpu_count)
        used = int(n.gpus[i].memory_total_bytes * rng.uniform(0.96, 0.995))
        g = _set_gpu(n, i, used)
        n.gpu_procs[i] = n.gpu_procs[i].model_copy(
            update={"used_gpu_memory_bytes": used - 256 * MI}
        )
        subject = g.uuid
    elif cls == "gpu_orphan":
        i = rng.randrange(gpu_count)
        total = n.gpus[i].memory_total_bytes
        held = int(total * rng.uniform(0.5, 0.9))
        pod_part = min(n.gpu_procs[i].used_gpu_memory_bytes or 0, int((total - held) * 0.9))
        n.gpu_procs[i] = n.gpu_procs[i].model_copy(update={"used_gpu_memory_bytes": pod_part})
        g = _set_gpu(n, i, held + pod_part + 256 * MI)
        cg = rng.choice(("/", "/system.slice/containerd.service", None))
        orphan = _system(
            n, rng.choice(("python3", "python", "torchrun")), rng.randint(1, 4) * GI, cg
        )
        n.gpu_procs.append(
            GpuProcess(
                gpu_index=i,
                gpu_uuid=g.uuid,
                pid=orphan.pid,
                used_gpu_memory_bytes=held,
                command=orphan.command,
            )
        )
        subject = g.uuid
    bundle = _finish(n, k, pressured=False)
    if cls == "healthy":
        bundle = _finish_looks_full(bundle)
    return Planted(cls, CAUSE[cls], subject, bundle, _view(n))


def _gaps(b: EvidenceBundle, rng: random.Random) -> EvidenceBundle:
    """Sometimes what a real collector meets: a denied file, an unreadable slabinfo."""
    pool = [
        Gap(source="procfs:/proc/<pid>/statm", reason="permission denied for 3 process(es)"),
        Gap(source="procfs:/proc/slabinfo", reason="permission denied"),
        Gap(source="procfs:/proc/4242/smaps_rollup", reason="permission denied"),
    ]
    gaps = [g for g in pool if rng.random() < 0.15]
    return b.model_copy(update={"gaps": gaps}) if gaps else b


def _finish_looks_full(b: EvidenceBundle) -> EvidenceBundle:
    """Move most of MemFree into reclaimable page cache: full to ``free``, fine to the kernel."""
    mi = b.meminfo
    assert mi is not None
    moved = int(mi.mem_free_bytes * 0.9)
    new = mi.model_copy(
        update={
            "mem_free_bytes": mi.mem_free_bytes - moved,
            "cached_bytes": mi.cached_bytes + moved,
        }
    )
    return b.model_copy(update={"meminfo": new, "free": free_figures(new)})


def nodes(count: int, seed: int) -> list[Planted]:
    """``count`` nodes, classes in turn, from one seeded generator (the bench's corpus)."""
    rng = random.Random(seed)
    return [plant(CLASSES[i % len(CLASSES)], rng) for i in range(count)]
