"""Generate the host tree a node's collector reads: /proc and cgroup files, fake NVML spec.

``write_host_tree(sim, node_name, root)`` writes under ``root``:
- ``proc/meminfo`` (every standard key; MemTotal = MemFree + AnonPages + Cached + Buffers
  + Slab + KernelStack + PageTables + Percpu + VmallocUsed, exactly), ``proc/pressure/memory``,
  ``proc/net/sockstat``;
- ``proc/<pid>/{status,cmdline,comm,cgroup,statm,smaps_rollup}`` for every process of every
  running pod on the node and for the node's system processes (host PIDs, deterministic);
- cgroup memory files for the kubepods hierarchy, QoS levels, pods and containers, in the
  node's cgroup version, driver and runtime (container ids match the pods'
  ``status.containerStatuses[].containerID``, pod UIDs match the API objects);
- ``nvml.json``, the fake NVML spec for GPU nodes (process PIDs = host PIDs).
Returns the path of the NVML spec, or None for a node without GPUs.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bot.sandbox.kubesim import scenarios as sc
from bot.sandbox.kubesim.cgroupfiles import ZERO, Layout, add, memory_files
from bot.sandbox.kubesim.defaults import stable_uid
from bot.sandbox.kubesim.quantities import to_bytes
from bot.sandbox.kubesim.usage import Figures, figures

if TYPE_CHECKING:
    from bot.sandbox.kubesim.sim import KubeSim

Obj = dict[str, Any]
KB = 1024
PID_BASE = 2_210_000  # container processes; system daemons start at 1100


def _w(root: Path, rel: str, text: str | bytes) -> None:
    p = root / rel
    p.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        p.write_bytes(text)
    else:
        p.write_text(text, encoding="utf-8")


def meminfo(node: sc.Node, pods: Figures) -> dict[str, int]:
    """Node meminfo in bytes; raises ValueError when the scenario does not fit in MemTotal."""
    k = node.kernel
    total = to_bytes(node.capacity.get("memory", "0"))
    sys_anon = to_bytes(k.system_anon)
    anon = pods.anon + sys_anon
    shmem = pods.shmem + to_bytes(k.shmem)
    cached = pods.file + to_bytes(k.page_cache) + to_bytes(k.shmem)
    buffers = to_bytes(k.buffers)
    srec, sunrec = to_bytes(k.slab_reclaimable), to_bytes(k.slab_unreclaimable)
    stack, ptables = to_bytes(k.kernel_stack), to_bytes(k.page_tables)
    percpu, vmalloc = to_bytes(k.percpu), to_bytes(k.other)
    used = anon + cached + buffers + srec + sunrec + stack + ptables + percpu + vmalloc
    free = total - used
    if free < 0:
        raise ValueError(
            f"node {node.name}: scenario memory ({used} bytes) exceeds MemTotal "
            f"({total}); lower usage or raise capacity.memory"
        )
    file_lru = cached - shmem + buffers
    inactive_file = min(file_lru, pods.inactive_file + to_bytes(k.page_cache) // 2)
    low = max(64 * 2**20, total // 1000)  # stands in for the zones' low watermarks
    if k.mem_available is not None:
        available = to_bytes(k.mem_available)
    else:
        available = max(
            0, free - low + file_lru - min(file_lru // 2, low) + srec - min(srec // 2, low)
        )
    if available > free + file_lru + srec:
        raise ValueError(
            f"node {node.name}: mem_available exceeds free + page cache + reclaimable slab"
        )
    anon_lru = anon + shmem
    return {
        "MemTotal": total,
        "MemFree": free,
        "MemAvailable": available,
        "Buffers": buffers,
        "Cached": cached,
        "SwapCached": 0,
        "Active": int(anon_lru * 0.9) + file_lru - inactive_file,
        "Inactive": anon_lru - int(anon_lru * 0.9) + inactive_file,
        "Active(anon)": int(anon_lru * 0.9),
        "Inactive(anon)": anon_lru - int(anon_lru * 0.9),
        "Active(file)": file_lru - inactive_file,
        "Inactive(file)": inactive_file,
        "Unevictable": 0,
        "Mlocked": 0,
        "SwapTotal": 0,
        "SwapFree": 0,
        "Zswap": 0,
        "Zswapped": 0,
        "Dirty": 2 * 2**20,
        "Writeback": 0,
        "AnonPages": anon,
        "Mapped": pods.file // 4 + 512 * 2**20,
        "Shmem": shmem,
        "KReclaimable": srec,
        "Slab": srec + sunrec,
        "SReclaimable": srec,
        "SUnreclaim": sunrec,
        "KernelStack": stack,
        "PageTables": ptables,
        "SecPageTables": 0,
        "NFS_Unstable": 0,
        "Bounce": 0,
        "WritebackTmp": 0,
        "CommitLimit": total // 2,
        "Committed_AS": anon + shmem + 8 * 2**30,
        "VmallocTotal": 34359738367 * KB,
        "VmallocUsed": vmalloc,
        "VmallocChunk": 0,
        "Percpu": percpu,
        "HardwareCorrupted": 0,
        "AnonHugePages": 0,
        "ShmemHugePages": 0,
        "ShmemPmdMapped": 0,
        "FileHugePages": 0,
        "FilePmdMapped": 0,
        "Unaccepted": 0,
        "HugePages_Total": 0,
        "HugePages_Free": 0,
        "HugePages_Rsvd": 0,
        "HugePages_Surp": 0,
        "Hugepagesize": 2048 * KB,
        "Hugetlb": 0,
        "DirectMap4k": 1 * 2**30,
        "DirectMap2M": 64 * 2**30,
        "DirectMap1G": max(0, total - 65 * 2**30),
    }


def format_meminfo(values: dict[str, int]) -> str:
    lines = []
    for key, v in values.items():
        if key.startswith("HugePages_"):
            lines.append(f"{key + ':':<16}{v:>8}")
        else:
            lines.append(f"{key + ':':<16}{v // KB:>8} kB")
    return "\n".join(lines) + "\n"


def kb(b: int) -> str:
    """A ``/proc/PID/status`` value: kB right-aligned in 8 columns."""
    return f"{b // KB:>8} kB"


def _proc_files(root: Path, pid: int, p: sc.Process, cgroup_text: str, *, ppid: int) -> None:
    anon, file, shm = to_bytes(p.rss_anon), to_bytes(p.rss_file), to_bytes(p.rss_shmem)
    rss = anon + file + shm
    vsz = rss + 2 * 2**30
    name = p.command[:15]
    status = (
        f"Name:\t{name}\nUmask:\t0022\nState:\tS (sleeping)\nTgid:\t{pid}\nNgid:\t0\n"
        f"Pid:\t{pid}\nPPid:\t{ppid}\nTracerPid:\t0\nUid:\t1000\t1000\t1000\t1000\n"
        f"Gid:\t1000\t1000\t1000\t1000\nFDSize:\t256\nGroups:\t1000\nNStgid:\t{pid}\n"
        f"NSpid:\t{pid}\nNSpgid:\t{pid}\nNSsid:\t{pid}\nVmPeak:\t{kb(vsz)}\n"
        f"VmSize:\t{kb(vsz)}\nVmLck:\t{kb(0)}\nVmPin:\t{kb(0)}\nVmHWM:\t{kb(rss)}\n"
        f"VmRSS:\t{kb(rss)}\nRssAnon:\t{kb(anon)}\nRssFile:\t{kb(file)}\n"
        f"RssShmem:\t{kb(shm)}\nVmData:\t{kb(anon + 2**20)}\nVmStk:\t{kb(132 * KB)}\n"
        f"VmExe:\t{kb(4 * 2**20)}\nVmLib:\t{kb(60 * 2**20)}\nVmPTE:\t{kb(rss // 512)}\n"
        f"VmSwap:\t{kb(0)}\nHugetlbPages:\t{kb(0)}\nCoreDumping:\t0\nTHP_enabled:\t1\n"
        f"Threads:\t16\nSigQ:\t0/1030000\n"
    )
    page = 4096
    statm = (
        f"{vsz // page} {rss // page} {(file + shm) // page} {4 * 2**20 // page} 0 "
        f"{(anon + 2**20) // page} 0\n"
    )
    smaps = (
        f"00400000-7ffd4a3c1000 ---p 00000000 00:00 0                          [rollup]\n"
        f"Rss:            {kb(rss)}\nPss:            {kb(rss)}\n"
        f"Pss_Dirty:      {kb(anon + shm)}\nPss_Anon:       {kb(anon)}\n"
        f"Pss_File:       {kb(file)}\nPss_Shmem:      {kb(shm)}\n"
        f"Shared_Clean:   {kb(0)}\nShared_Dirty:   {kb(0)}\n"
        f"Private_Clean:  {kb(file)}\nPrivate_Dirty:  {kb(anon + shm)}\n"
        f"Referenced:     {kb(rss)}\nAnonymous:      {kb(anon)}\nKSM:            {kb(0)}\n"
        f"LazyFree:       {kb(0)}\nAnonHugePages:  {kb(0)}\nShmemPmdMapped: {kb(0)}\n"
        f"FilePmdMapped:  {kb(0)}\nShared_Hugetlb: {kb(0)}\nPrivate_Hugetlb:{kb(0)}\n"
        f"Swap:           {kb(0)}\nSwapPss:        {kb(0)}\nLocked:         {kb(0)}\n"
    )
    args = (p.cmdline or p.command).split()
    base = f"proc/{pid}"
    _w(root, f"{base}/status", status)
    _w(root, f"{base}/statm", statm)
    _w(root, f"{base}/smaps_rollup", smaps)
    _w(root, f"{base}/comm", name + "\n")
    _w(root, f"{base}/cmdline", b"".join(a.encode() + b"\0" for a in args))
    _w(root, f"{base}/cgroup", cgroup_text)


def _pods_on(sim: KubeSim, node: str) -> list[Obj]:
    return [
        p
        for p in sim.api.store.list("pods")
        if (p.get("spec") or {}).get("nodeName") == node
        and (p.get("status") or {}).get("phase") == "Running"
    ]


def _limit(containers: list[Obj]) -> int | None:
    total = 0
    for c in containers:
        lim = ((c.get("resources") or {}).get("limits") or {}).get("memory")
        if lim is None:
            return None
        total += to_bytes(lim)
    return total


def write_host_tree(sim: KubeSim, node_name: str, root: Path) -> Path | None:
    node = sim.scenario.node(node_name)
    if node is None:
        raise ValueError(f"node {node_name!r} is not in scenario {sim.scenario.name!r}")
    layout = Layout(node.cgroup_version, node.cgroup_driver, node.runtime)
    pid = 1100
    for p in node.system_processes:
        svc = f"system.slice/{p.command.split('-')[0]}.service"
        _proc_files(root, pid, p, layout.proc_cgroup(svc), ppid=1)
        pid += 1
    pid = PID_BASE
    node_total, qos_totals = ZERO, {"burstable": ZERO, "besteffort": ZERO, "guaranteed": ZERO}
    gpu_procs: dict[int, list[tuple[int, int]]] = {}
    for pod in _pods_on(sim, node_name):
        uid = pod["metadata"]["uid"]
        qos = (pod.get("status") or {}).get("qosClass", "BestEffort").lower()
        figs = figures(sim, pod)
        cids = {
            cs["name"]: cs.get("containerID", "").split("://")[-1]
            for cs in (pod.get("status") or {}).get("containerStatuses") or []
        }
        pod_total = ZERO
        specs = {c["name"]: c for c in pod["spec"]["containers"]}
        for cname, f in figs.items():
            cid = cids.get(cname) or stable_uid("cid", uid, cname).replace("-", "") * 2
            cdir = layout.container_dir(qos, uid, cid)
            lim = _limit([specs[cname]])
            ooms = _ooms(sim, pod, cname)
            for fname, text in memory_files(layout, f, limit=lim, ooms=ooms).items():
                _w(root, f"{layout.mount}/{cdir}/{fname}", text)
            procs = f.processes or (sc.Process(command=cname[:15], cmdline=cname, rss_anon=f.anon),)
            parent = pid
            for proc in procs:
                _proc_files(root, pid, proc, layout.proc_cgroup(cdir), ppid=parent)
                for idx, used in proc.gpu_memory.items():
                    gpu_procs.setdefault(int(idx), []).append((pid, to_bytes(used)))
                pid += 1
            pid += 7  # runtimes leave gaps (shims, pause)
            pod_total = add(pod_total, f)
        pdir = layout.pod_dir(qos, uid)
        for fname, text in memory_files(
            layout, pod_total, limit=_limit(pod["spec"]["containers"])
        ).items():
            _w(root, f"{layout.mount}/{pdir}/{fname}", text)
        qos_totals[qos] = add(qos_totals[qos], pod_total)
        node_total = add(node_total, pod_total)
    kube_dir = "kubepods.slice" if layout.driver == "systemd" else "kubepods"
    for q in ("burstable", "besteffort"):
        qdir = f"{kube_dir}/kubepods-{q}.slice" if layout.driver == "systemd" else f"{kube_dir}/{q}"
        for fname, text in memory_files(layout, qos_totals[q], limit=None).items():
            _w(root, f"{layout.mount}/{qdir}/{fname}", text)
    alloc = to_bytes(node.allocatable.get("memory", node.capacity.get("memory", 0)))
    for fname, text in memory_files(layout, node_total, limit=alloc).items():
        _w(root, f"{layout.mount}/{kube_dir}/{fname}", text)
    values = meminfo(node, node_total)
    _w(root, "proc/meminfo", format_meminfo(values))
    pr = node.pressure
    _w(
        root,
        "proc/pressure/memory",
        f"some avg10={pr.some_avg10:.2f} avg60={pr.some_avg60:.2f} avg300={pr.some_avg300:.2f} "
        f"total={pr.some_total_us}\nfull avg10={pr.full_avg10:.2f} avg60={pr.full_avg60:.2f} "
        f"avg300={pr.full_avg300:.2f} total={pr.full_total_us}\n",
    )
    _w(
        root,
        "proc/net/sockstat",
        f"sockets: used 1843\nTCP: inuse 312 orphan 0 tw 41 alloc 356 mem "
        f"{node.kernel.sock_tcp_pages}\nUDP: inuse 9 mem 12\nUDPLITE: inuse 0\n"
        "RAW: inuse 0\nFRAG: inuse 0 memory 0\n",
    )
    if layout.version == 2:
        _w(
            root,
            "sys/fs/cgroup/cgroup.controllers",
            "cpuset cpu io memory hugetlb pids rdma misc\n",
        )
    if node.gpus is None:
        return None
    spec = nvml_spec(node.gpus, node.name, gpu_procs)
    path = root / "nvml.json"
    path.write_text(json.dumps(spec, indent=1), encoding="utf-8")
    return path


def _ooms(sim: KubeSim, pod: Obj, cname: str) -> int:
    for cs in (pod.get("status") or {}).get("containerStatuses") or []:
        last = (cs.get("lastState") or {}).get("terminated") or {}
        if cs["name"] == cname and last.get("reason") == "OOMKilled":
            return int(cs.get("restartCount", 1))
    return 0


def nvml_spec(g: sc.Gpus, node: str, procs: dict[int, list[tuple[int, int]]]) -> Obj:
    devices = []
    reserved = to_bytes(g.reserved)
    for i in range(g.count):
        plist = procs.get(i, [])
        devices.append(
            {
                "index": i,
                "uuid": "GPU-" + stable_uid("gpu", node, str(i)),
                "name": g.product.replace("-", " ").replace(
                    "NVIDIA H100 80GB HBM3", "NVIDIA H100 80GB HBM3"
                ),
                "memory_total_bytes": to_bytes(g.memory_total),
                "memory_used_bytes": sum(u for _, u in plist),
                "memory_reserved_bytes": reserved,
                "utilization_gpu_percent": g.utilization_percent if plist else 0,
                "processes": [{"pid": p, "used_gpu_memory_bytes": u} for p, u in plist],
            }
        )
    return {
        "driver_version": g.driver_version,
        "memory_info_version": g.memory_info_version,
        "fail": g.fail,
        "devices": devices,
    }
