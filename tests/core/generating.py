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

- the advice shapes (``SHAPE_CLASSES``), each with its plan values known by
  construction (``Advice``): ``multi_replica`` (8-14 replicas of one Deployment here),
  ``spread_replicas`` (1-3 here, more on other nodes: the workload's replica count),
  ``sidecar_leak`` (a GPU training pod inside its request whose log-shipper sidecar leaks,
  regular or native), ``multi_container`` (a second container leaks), ``cpu_only`` (no GPU
  anywhere; the leak is the app or its log-shipper sidecar), ``healthy_cache`` (a big clean
  page cache, nothing short), ``near_tie`` (a runner-up within 7-15%), ``gang`` (a
  PyTorchJob's labelled GPU workers beside a leaking Deployment), ``besteffort_leak`` (a
  BestEffort pod leaks beside a bigger training inside its request: the BestEffort pod is
  the culprit), ``time_sliced`` (4 GPUs shared 4 ways; an inference pod holds most of GPU
  0, three crash-looping pods share it: ``gpu_memory`` on GPU 0) and ``node_agent``
  (kubelet, containerd, CRI-O, journald, the NVIDIA persistence daemon or DCGM leaks: its
  unit's runbook).

The meminfo is consistent: MemTotal = MemFree + Buffers + Cached (reclaimable cache + all
shmem) + AnonPages + Slab + PageTables + KernelStack + Percpu + VmallocUsed + huge pages.
Used by ``test_verdict_generator.py`` (hypothesis draws the ``random.Random``) and by
``bench/verdicts.py`` (500 nodes, fixed seed). Pure: no I/O.
"""

from __future__ import annotations

import dataclasses
import random
from dataclasses import dataclass, field
from datetime import UTC, datetime

from bot.core.diagnosis.memory import free_figures
from bot.core.model.cluster import (
    ClusterView,
    ContainerInfo,
    EventInfo,
    NodeInfo,
    OwnerRef,
    PodInfo,
    ResourceAllocation,
)
from bot.core.model.evidence import (
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
from bot.core.model.workloads import WorkloadInfo

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
#: the advice shapes: planted with their advice ranges (``Advice``)
SHAPE_CLASSES = (
    "multi_replica",
    "spread_replicas",
    "sidecar_leak",
    "multi_container",
    "cpu_only",
    "healthy_cache",
    "near_tie",
    "gang",
    "besteffort_leak",
    "time_sliced",
    "node_agent",
)
CLASSES = HOST_CLASSES + LOCAL_CLASSES + SHAPE_CLASSES
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
    "multi_replica": "host_memory_workload",
    "spread_replicas": "host_memory_workload",
    "sidecar_leak": "host_memory_workload",
    "multi_container": "host_memory_workload",
    "cpu_only": "host_memory_workload",
    "healthy_cache": "healthy",
    "near_tie": "host_memory_workload",
    "gang": "host_memory_workload",
    "besteffort_leak": "host_memory_workload",
    "time_sliced": "gpu_memory",
    "node_agent": "system_process",
}
#: pods whose owner gangs them (the PyTorchJob operator labels every member)
PYTORCHJOB = ("PyTorchJob", "kubeflow.org/v1")
_DAEMONS = ("kubelet", "containerd", "nvidia-persistenced", "nv-hostengine", "sshd", "rsyslogd")
_HOGS = ("nv-hostengine", "fluent-bit", "backup-agent", "etl-cron", "clamd", "prometheus")


@dataclass(frozen=True)
class Advice:
    """The plan values a right answer falls in, known by construction (bytes, counts).

    - ``cap_container`` / ``cap_min`` / ``cap_max``: tier 3 is available and caps that
      container (of the culprit's owner) at a memory limit in the range: at least half of
      what it holds in its biggest pod here (less 1 GiB of rounding), at most what it holds
      (a cap that frees nothing is no cap on a short node); None: tier 3 not judged;
    - ``evict_max``: tier 1, when available, evicts at most this many pods: the smallest set
      in the kubelet's ranking (above request first, then usage above request) whose working
      sets cover the shortage plus 5% of RAM, plus one; 0: tier 1 must not be available (the
      node is not short); None: not judged;
    - ``evict_must``: pods tier 1 must evict when it is available (the culprit, when the
      kubelet's ranking puts it first);
    - ``restarts_total``: replicas of the capped owner across the cluster (all roll);
    - ``runbook_unit``: a runbook step names this unit (a process outside Kubernetes).
    """

    cap_container: str | None = None
    cap_min: int | None = None
    cap_max: int | None = None
    evict_max: int | None = None
    evict_must: tuple[str, ...] = ()
    restarts_total: int | None = None
    runbook_unit: str | None = None


@dataclass(frozen=True)
class Planted:
    cls: str
    cause: str
    subject: str
    bundle: EvidenceBundle
    view: ClusterView
    advice: Advice = field(default_factory=Advice)


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
    elsewhere: list[PodInfo] = field(default_factory=list)
    workloads: list[WorkloadInfo] = field(default_factory=list)
    labels: dict[str, str] = field(default_factory=dict)
    gpu_resource: str = "nvidia.com/gpu"
    gpu_allocatable: int | None = None
    cpu_only: bool = False
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


@dataclass(frozen=True)
class _Extra:
    """A second container of a pod: a sidecar (``native``: an init container with
    ``restartPolicy: Always``) or another regular container."""

    name: str
    ws: int
    request: int
    limit: int | None = None
    native: bool = False
    comm: str = "fluent-bit"


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
    extras: tuple[_Extra, ...] = (),
    labels: dict[str, str] | None = None,
    api_version: str = "",
    accelerators: dict[str, int] | None = None,
    restarts: int = 0,
    node: str = NODE,
    annotations: dict[str, str] | None = None,
) -> PodInfo:
    """A pod whose main container's cgroup holds ``ws`` (anon ``ws - shmem`` + shmem), and
    its ``extras``' containers; ``node`` other than ``NODE``: a replica elsewhere (in the
    view's workload, not in the bundle)."""
    serial = n.next_uid  # ids and names are unique by construction, not by chance
    n.next_uid += 1
    uid = f"{serial:08x}-0000-4000-8000-{n.rng.getrandbits(48):012x}"
    cid = f"{serial:08x}{n.rng.getrandbits(224):056x}"
    request = request if request is not None else min(ws, limit or ws) // 2
    reqs = {"memory": f"{max(1, request // MI)}Mi"} if request else {}
    lims = {"memory": f"{limit // MI}Mi"} if limit else {}
    if gpu:
        reqs["nvidia.com/gpu"] = lims["nvidia.com/gpu"] = str(gpu)
    for res, count in (accelerators or {}).items():
        reqs[res] = lims[res] = str(count)
    kind, owner_name = owner if owner is not None else ("Deployment", name.rsplit("-", 2)[0])
    owners = (
        [] if kind == "Pod" else [OwnerRef(kind=kind, name=owner_name, api_version=api_version)]
    )
    infos = [
        ContainerInfo(
            name="main", container_id=cid, requests=reqs, limits=lims, restart_count=restarts
        )
    ]
    side_ids = []
    for x in extras:
        xid = f"{serial:08x}{n.rng.getrandbits(224):056x}"
        side_ids.append(xid)
        infos.append(
            ContainerInfo(
                name=x.name,
                init=x.native,
                sidecar=x.native,
                container_id=xid,
                requests={"memory": f"{max(1, x.request // MI)}Mi"} if x.request else {},
                limits={"memory": f"{x.limit // MI}Mi"} if x.limit else {},
            )
        )
    total_request = (request // MI) * MI + sum((x.request // MI) * MI for x in extras)
    all_limited = bool(limit) and all(x.limit for x in extras)
    total_limit = (
        (limit or 0) // MI * MI + sum((x.limit or 0) // MI * MI for x in extras)
        if all_limited
        else None
    )
    qos = "besteffort" if total_request == 0 and not all_limited else "burstable"
    pod = PodInfo(
        namespace=ns,
        name=name,
        uid=uid,
        node_name=node,
        qos_class=qos,
        labels=dict(labels or {}),
        annotations=dict(annotations or {}),
        owners=owners,
        containers=infos,
        memory_request_bytes=total_request,
        memory_limit_bytes=total_limit,
        gpu_request=gpu,
        accelerators={**({"nvidia.com/gpu": gpu} if gpu else {}), **(accelerators or {})},
        is_daemonset=kind == "DaemonSet",
        has_emptydir=shmem > 0,
    )
    if node != NODE:
        n.elsewhere.append(pod)
        return pod
    path = f"/kubepods.slice/kubepods-{qos}.slice/kubepods-{qos}-pod{uid.replace('-', '_')}.slice"
    n.pods.append(pod)
    specs = [("main", cid, ws, limit, shmem, oom_kills, procs or [("python", ws - shmem)])]
    specs += [
        (x.name, xid, x.ws, x.limit, 0, 0, [(x.comm, x.ws)])
        for x, xid in zip(extras, side_ids, strict=True)
    ]
    for _, c_id, c_ws, c_limit, c_shmem, kills, c_procs in specs:
        leaf = f"{path}/cri-containerd-{c_id}.scope"
        n.containers.append(
            ContainerMemory(
                cgroup_path=leaf,
                pod_uid=uid,
                container_id=c_id,
                runtime="containerd",
                qos=qos,
                usage_bytes=c_ws,
                limit_bytes=(c_limit // MI) * MI if c_limit else None,
                working_set_bytes=c_ws,
                anon_bytes=c_ws - c_shmem,
                file_bytes=c_shmem,
                shmem_bytes=c_shmem,
                inactive_file_bytes=0,
                kernel_bytes=0,
                oom_events=kills,
                oom_kill_events=kills,
            )
        )
        for comm, rss in c_procs:
            n.processes.append(
                ProcessMemory(
                    pid=n.pid(),
                    command=comm,
                    cmdline=comm,
                    rss_bytes=rss,
                    rss_anon_bytes=rss,
                    pod_uid=uid,
                    container_id=c_id,
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


#: the pod annotations by which owners ask the node autoscalers not to evict a pod
_AUTOSCALER_ASKS: tuple[dict[str, str], ...] = (
    {"karpenter.sh/do-not-disrupt": "true"},
    {"cluster-autoscaler.kubernetes.io/safe-to-evict": "false"},
)


def _asks_not_to_be_evicted(p: PodInfo) -> bool:
    return p.annotations.get("karpenter.sh/do-not-disrupt") == "true" or (
        p.annotations.get("cluster-autoscaler.kubernetes.io/safe-to-evict") == "false"
    )


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
        # every fourth group asks the autoscalers not to evict it (no random draw: the rest
        # of the node stays as the seed made it); tier 1 must leave it alone
        notes = _AUTOSCALER_ASKS[k // 4 % len(_AUTOSCALER_ASKS)] if k % 4 == 3 else {}
        for r in range(replicas):
            ws = max(64 * MI, group // replicas)
            limit = int(ws / n.rng.uniform(0.5, 0.8)) if limited and n.rng.random() < 0.8 else None
            name = f"{app}-{n.next_uid:05x}-{r}" if kind != "StatefulSet" else f"{app}-{r}"
            owner = (kind, app) if kind != "Pod" else ("Pod", name)
            ns = n.rng.choice(("data", "ml", "tools"))
            _pod(n, name, ws, ns=ns, limit=limit, owner=owner, annotations=notes)
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
    gpus = sum(p.accelerator_request for p in n.pods)
    devices = n.gpu_allocatable if n.gpu_allocatable is not None else len(n.gpus)
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
            resource=n.gpu_resource,
            requests=str(gpus),
            limits=str(gpus),
            requests_value=gpus,
            limits_value=gpus,
            allocatable_value=devices,
        ),
    ]
    # a CPU-only node has no GPU resource at all (older classes keep "0", as before)
    extended = {} if n.cpu_only else {n.gpu_resource: str(devices)}
    node = NodeInfo(
        name=NODE,
        labels=dict(n.labels),
        allocatable={"memory": f"{alloc // MI}Mi", **extended},
        capacity={"memory": f"{n.total // MI}Mi", **extended},
    )
    return ClusterView(
        node=node,
        pods=list(n.pods),
        events=list(n.events),
        allocated=rows[:1] if n.cpu_only else rows,
        workloads=list(n.workloads),
    )


def _training(n: _Node, ws: int, *, limit: bool = True, name: str = "train-0") -> PodInfo:
    lim = int(ws / n.rng.uniform(0.5, 0.8)) if limit else None
    return _pod(n, name, ws, gpu=n.rng.choice((4, 8)), limit=lim, owner=("StatefulSet", "train"))


def plant(cls: str, rng: random.Random) -> Planted:
    """One node with a culprit of class ``cls`` (see the module docstring)."""
    if cls not in CLASSES:
        raise ValueError(f"unknown class {cls!r}; one of {', '.join(CLASSES)}")
    if cls in SHAPE_CLASSES:
        return _plant_shape(cls, rng)
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
            # DCGM's host engine runs only where there are GPUs to watch
            comm = rng.choice(
                _HOGS if gpu_count else tuple(h for h in _HOGS if h != "nv-hostengine")
            )
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
        return _planted(n, cls, subject, bundle)
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
    return _planted(n, cls, subject, bundle)


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


# --- the advice shapes ---------------------------------------------------------------------

_AGENTS = (
    "kubelet",
    "containerd",
    "crio",
    "systemd-journald",
    "nvidia-persistenced",
    "nv-hostengine",
)
_SHAPE_PRESSURED = frozenset(SHAPE_CLASSES) - {"healthy_cache", "time_sliced"}


def _gang(n: _Node, job: str, members: int, ws: int) -> list[PodInfo]:
    """A PyTorchJob's workers here: GPU pods inside their requests, labelled as the
    operator labels them, owned by the job itself (no Deployment between)."""
    pods = []
    for r in range(members):
        pods.append(
            _pod(
                n,
                f"{job}-worker-{r}",
                ws,
                gpu=n.rng.choice((1, 2)),
                request=int(ws * 1.1),
                limit=int(ws * 1.3),
                owner=(PYTORCHJOB[0], job),
                api_version=PYTORCHJOB[1],
                labels={
                    "training.kubeflow.org/job-name": job,
                    "training.kubeflow.org/replica-type": "worker",
                    "training.kubeflow.org/replica-index": str(r),
                },
            )
        )
    return pods


def _replicas(
    n: _Node, app: str, total: int, count: int, *, ns: str = "web", limited: bool = True
) -> list[PodInfo]:
    """``count`` replicas of Deployment ``app`` here holding ``total`` together; the first
    is the biggest by a clear step (the subject)."""
    weights = sorted((n.rng.uniform(0.8, 1.0) for _ in range(count)), reverse=True)
    weights[0] += 0.12
    pods = []
    for w in weights:
        ws = int(total * w / sum(weights))
        limit = int(ws / n.rng.uniform(0.85, 1.0)) if limited else None
        name = f"{app}-{n.rng.getrandbits(24):06x}-{n.next_uid:03x}"
        pods.append(
            _pod(n, name, ws, ns=ns, limit=limit, request=ws // 3, owner=("Deployment", app))
        )
    return pods


def _plant_shape(cls: str, rng: random.Random) -> Planted:
    n = _Node(rng=rng, total=rng.randint(128, 2048) * GI)
    t = n.total
    k = _kernel(n)
    subject = NODE
    container = "main"
    restarts_total: int | None = None
    runbook: str | None = None
    pressured = cls in _SHAPE_PRESSURED
    n.cpu_only = cls == "cpu_only"
    if n.cpu_only:
        for name in ("node-exporter", "kube-proxy"):
            ws = rng.randint(100, 900) * MI
            _pod(
                n,
                f"{name}-{n.next_uid:05x}",
                ws,
                ns="kube-system",
                limit=2 * ws,
                owner=("DaemonSet", name),
            )
        for comm in rng.sample(("kubelet", "containerd", "sshd", "rsyslogd"), 3):
            _system(n, comm, rng.randint(50, 600) * MI, f"/system.slice/{comm}.service")
    elif cls == "node_agent":
        agent = rng.choice(_AGENTS)
        for name in ("dcgm-exporter", "node-exporter", "kube-proxy"):
            ws = rng.randint(100, 900) * MI
            _pod(
                n,
                f"{name}-{n.next_uid:05x}",
                ws,
                ns="kube-system",
                limit=2 * ws,
                owner=("DaemonSet", name),
            )
        for comm in rng.sample([d for d in _DAEMONS if d != agent], 3):
            _system(n, comm, rng.randint(50, 600) * MI, f"/system.slice/{comm}.service")
    else:
        _daemons(n)
    c = int(t * rng.uniform(0.15, 0.30 if cls == "besteffort_leak" else 0.45))
    cap = int(c * rng.uniform(0.2, 0.7))
    gpus = 0 if n.cpu_only else rng.choice((4, 8))
    train: PodInfo | None = None
    if cls in ("sidecar_leak", "besteffort_leak"):
        pass  # the training pod is the shape itself
    elif gpus and cls not in ("time_sliced", "gang"):
        train = _training(n, int(min(cap, t * 0.06) * rng.uniform(0.3, 1.0)))
    if cls == "multi_replica":
        pods = _replicas(n, "api-gateway", c, rng.randint(8, 14))
        subject = pods[0].key
    elif cls == "spread_replicas":
        here = rng.randint(1, 3)
        pods = _replicas(n, "feature-cache", c, here, ns="data")
        others = rng.randint(1, 6)
        for r in range(others):
            _pod(
                n,
                f"feature-cache-{rng.getrandbits(24):06x}-x{r}",
                GI,
                ns="data",
                owner=("Deployment", "feature-cache"),
                node=f"gen-node-{r + 2:02d}",
            )
        restarts_total = here + others
        n.workloads.append(
            WorkloadInfo(
                kind="Deployment",
                namespace="data",
                name="feature-cache",
                replicas=restarts_total,
                strategy="RollingUpdate",
                elsewhere={p.key: p.node_name or "" for p in n.elsewhere},
            )
        )
        subject = pods[0].key
    elif cls == "sidecar_leak":
        main_ws = int(t * rng.uniform(0.05, 0.2))
        side = _Extra(
            "log-shipper",
            c,
            request=256 * MI,
            limit=None,
            native=rng.random() < 0.5,
            comm="fluent-bit",
        )
        train = _pod(
            n,
            "train-0",
            main_ws,
            gpu=8,
            request=int(main_ws * 1.15),
            limit=int(main_ws * 1.4),
            owner=("StatefulSet", "train"),
            extras=(side,),
            procs=[("python", main_ws)],
        )
        subject, container = train.key, "log-shipper"
    elif cls == "multi_container":
        worker = _Extra("worker", c, request=c // 4, limit=None, comm="python")
        p = _pod(
            n,
            f"ingest-{rng.getrandbits(20):05x}-m",
            int(t * 0.01),
            ns="data",
            request=int(t * 0.01),
            limit=int(t * 0.02),
            extras=(worker,),
            owner=("Deployment", "ingest"),
            procs=[("nginx", int(t * 0.01))],
        )
        subject, container = p.key, "worker"
    elif cls == "cpu_only":
        in_sidecar = rng.random() < 0.5
        app_ws = int(t * 0.02) if in_sidecar else c
        side_ws = c if in_sidecar else 300 * MI
        side = _Extra(
            "log-shipper",
            side_ws,
            request=128 * MI,
            limit=None,
            native=rng.random() < 0.5,
            comm="fluent-bit",
        )
        p = _pod(
            n,
            f"etl-nightly-{rng.getrandbits(20):05x}-c",
            app_ws,
            ns="batch",
            request=app_ws // 3 if not in_sidecar else app_ws,
            extras=(side,),
            owner=("Deployment", "etl-nightly"),
        )
        subject, container = p.key, "log-shipper" if in_sidecar else "main"
    elif cls == "near_tie":
        a = _pod(
            n,
            f"ranker-{rng.getrandbits(20):05x}-a",
            c,
            ns="search",
            request=c // 4,
            owner=("Deployment", "ranker"),
        )
        b_ws = int(c * rng.uniform(0.85, 0.93))
        _pod(
            n,
            f"indexer-{rng.getrandbits(20):05x}-b",
            b_ws,
            ns="search",
            request=b_ws // 4,
            owner=("Deployment", "indexer"),
        )
        subject = a.key
        cap = int(c * 0.9)  # the runner-up is a near tie, the background stays below it
    elif cls == "gang":
        _gang(n, "llm-pretrain", rng.randint(2, 4), int(t * rng.uniform(0.02, 0.05)))
        p = _pod(
            n, f"preprocess-{rng.getrandbits(20):05x}-g", c, ns="data", owner=("Deployment", "prep")
        )
        subject = p.key
    elif cls == "besteffort_leak":
        # the training holds more than the leak, but inside its request: it is entitled to it
        tr_ws = int(c * rng.uniform(1.1, 1.5))
        train = _pod(
            n,
            "train-0",
            tr_ws,
            gpu=8,
            request=int(tr_ws * 1.05),
            limit=int(tr_ws * 1.2),
            owner=("StatefulSet", "train"),
        )
        p = _pod(
            n,
            f"scratch-{rng.getrandbits(20):05x}-b",
            c,
            ns="research",
            request=0,
            owner=("Deployment", "scratch"),
        )
        subject = p.key
    elif cls == "node_agent":
        proc = _system(n, agent, c, f"/system.slice/{agent}.service")
        subject = f"system.slice/{agent}.service"
        runbook = f"{agent}.service"
        del proc
    if cls == "time_sliced":
        return _plant_time_sliced(n, k)
    _gpus(n, gpus, train)
    if pressured:
        if cls == "gang" or cls == "besteffort_leak":
            cap = min(cap, int(c * 0.8))
        used = n.anon() + n.pod_shmem() + k.host_shmem + _kernel_bytes(k)
        left_target = int(t * rng.uniform(0.005, 0.035))
        noise = int(t * rng.uniform(0.0, 0.02))
        _background_pods(n, t - used - left_target - noise, cap, limited=True)
        n.events.append(
            EventInfo(
                involved_kind="Node",
                involved_name=NODE,
                reason="SystemOOM",
                type="Warning",
                message="System OOM encountered",
            )
        )
        bundle = _finish(n, k, pressured=True, unattributed=noise)
    else:  # healthy_cache: a big page cache, all of it reclaimable
        _background_pods(n, int(t * rng.uniform(0.05, 0.25)), int(t * 0.06), limited=True)
        bundle = _finish_big_cache(_finish(n, k, pressured=False), rng)
    return _planted(
        n,
        cls,
        subject,
        bundle,
        container=container,
        restarts_total=restarts_total,
        runbook=runbook,
    )


def _plant_time_sliced(n: _Node, k: _Kernel) -> Planted:
    """4 physical GPUs shared 4 ways by time-slicing (GPU feature discovery's labels, 16
    ``nvidia.com/gpu``): an inference pod holds most of GPU 0, three pods on it crash-loop."""
    rng = n.rng
    n.labels = {
        "nvidia.com/gpu.replicas": "4",
        "nvidia.com/gpu.sharing-strategy": "time-slicing",
        "nvidia.com/gpu.product": "NVIDIA-A100-SXM4-80GB-SHARED",
    }
    n.gpu_allocatable = 16
    for i in range(4):
        total = 80 * GI
        n.gpus.append(
            GpuDevice(
                index=i,
                uuid=f"GPU-{rng.getrandbits(32):08x}-{i:04d}-4000-8000-{rng.getrandbits(48):012x}",
                name="NVIDIA A100-SXM4-80GB",
                memory_total_bytes=total,
                memory_used_bytes=0,
                memory_free_bytes=total,
            )
        )
    hog = _pod(
        n,
        f"llm-serve-{rng.getrandbits(20):05x}-t",
        int(n.total * 0.03),
        ns="serving",
        gpu=1,
        owner=("Deployment", "llm-serve"),
    )
    users = [hog] + [
        _pod(
            n,
            f"embed-api-{rng.getrandbits(20):05x}-{r}",
            int(n.total * 0.005),
            ns="serving",
            gpu=1,
            owner=("Deployment", "embed-api"),
            restarts=rng.randint(3, 9),
        )
        for r in range(3)
    ]
    held = int(80 * GI * rng.uniform(0.86, 0.92))
    small = [int(rng.uniform(1.0, 2.0) * GI) for _ in users[1:]]
    used = held + sum(small)
    for pod, b in zip(users, [held, *small], strict=True):
        proc = next(p for p in n.processes if p.pod_uid == pod.uid)
        n.gpu_procs.append(
            GpuProcess(
                gpu_index=0,
                gpu_uuid=n.gpus[0].uuid,
                pid=proc.pid,
                used_gpu_memory_bytes=b,
                command=proc.command,
                pod_uid=pod.uid,
                container_id=pod.containers[0].container_id,
            )
        )
    g = _set_gpu(n, 0, min(used + 256 * MI, 80 * GI - 64 * MI))
    _background_pods(n, int(n.total * rng.uniform(0.05, 0.3)), int(n.total * 0.06), limited=True)
    bundle = _finish(n, k, pressured=False)
    return _planted(n, "time_sliced", g.uuid, bundle)


def _finish_big_cache(b: EvidenceBundle, rng: random.Random) -> EvidenceBundle:
    """Most of MemFree becomes clean page cache (inactive file): MemAvailable stays high."""
    mi = b.meminfo
    assert mi is not None
    moved = int(mi.mem_free_bytes * rng.uniform(0.85, 0.97))
    new = mi.model_copy(
        update={
            "mem_free_bytes": mi.mem_free_bytes - moved,
            "cached_bytes": mi.cached_bytes + moved,
        }
    )
    return b.model_copy(update={"meminfo": new, "free": free_figures(new)})


def _kubelet_rank(n: _Node, ws: dict[str, int]) -> list[PodInfo]:
    """Pods tier 1 may evict, in the kubelet's order: above request first, then priority
    (all 0 here), then usage above request."""

    def evictable(p: PodInfo) -> bool:
        return not (
            p.is_daemonset
            or p.accelerators
            or not p.owners
            or any(k.startswith("training.kubeflow.org/") for k in p.labels)
            or _asks_not_to_be_evicted(p)
        )

    pods = [p for p in n.pods if evictable(p)]
    return sorted(
        pods,
        key=lambda p: (ws[p.uid] <= p.memory_request_bytes, -(ws[p.uid] - p.memory_request_bytes)),
    )


def _planted(
    n: _Node,
    cls: str,
    subject: str,
    bundle: EvidenceBundle,
    *,
    container: str = "main",
    restarts_total: int | None = None,
    runbook: str | None = None,
) -> Planted:
    view = _view(n)
    t = n.total
    mi = bundle.meminfo
    assert mi is not None and mi.mem_available_bytes is not None
    shortage = max(0, int(t * 0.10) - mi.mem_available_bytes)
    ws: dict[str, int] = {}
    held: dict[tuple[str, str], int] = {}
    names = {c.container_id: c.name for p in n.pods for c in p.containers}
    for c in n.containers:
        assert c.pod_uid is not None and c.container_id is not None
        ws[c.pod_uid] = ws.get(c.pod_uid, 0) + (c.working_set_bytes or 0)
        held[(c.pod_uid, names[c.container_id])] = c.working_set_bytes or 0
    advice = Advice(runbook_unit=runbook, restarts_total=restarts_total)
    if not shortage:
        return Planted(
            cls, CAUSE[cls], subject, bundle, view, dataclasses.replace(advice, evict_max=0)
        )
    culprit = next((p for p in n.pods if p.key == subject), None)
    evict_max, covered = 0, 0
    for p in _kubelet_rank(n, ws):
        if covered >= shortage + 0.05 * t:
            break
        covered += ws[p.uid]
        evict_max += 1
    advice = dataclasses.replace(advice, evict_max=evict_max + 1)
    ranked = _kubelet_rank(n, ws)
    if culprit is not None and ranked and ranked[0] == culprit:
        # the kubelet's first victim is the culprit: the fewest evictions start with it
        advice = dataclasses.replace(advice, evict_must=(culprit.key,))
    owner = culprit.top_owner if culprit is not None else None
    if culprit is not None and owner is not None and owner.kind in ("Deployment", "StatefulSet"):
        group = [p for p in n.pods if p.namespace == culprit.namespace and p.top_owner == owner]
        most = max(held.get((p.uid, container), 0) for p in group)
        advice = dataclasses.replace(
            advice, cap_container=container, cap_min=most // 2 - GI, cap_max=most
        )
    return Planted(cls, CAUSE[cls], subject, bundle, view, advice)
