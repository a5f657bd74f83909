"""``/proc`` contents of a simulated node: meminfo, memory PSI, sockstat and per-process files.

Pure: functions return text or numbers; ``hosttree`` writes them.

The node's memory is a function of the pods on it *now*. The scenario's kernel figures
(slab, page tables, kernel stacks, percpu, vmalloc, buffers, host page cache, system anon)
stay fixed; AnonPages, Cached, Shmem and the file LRU follow the pods present, and MemFree
is what is left of MemTotal, so ``MemTotal = MemFree + AnonPages + Cached + Buffers + Slab
+ KernelStack + PageTables + Percpu + VmallocUsed + socket buffers + Hugetlb`` holds exactly
in every state (socket buffers: the TCP + UDP ``mem`` pages of ``/proc/net/sockstat``, which
no meminfo line shows, as on a real node; Hugetlb: every hugepage pool, used or not, in no
other line). Cached includes Shmem (tmpfs, /dev/shm, memory-backed emptyDirs: pods' shmem
and the host's ``kernel.shmem``), which sits on the anon LRU and is not reclaimable. A pod that
leaves takes its anon memory and its page cache with it (its emptyDir and private files go).

MemAvailable follows the kernel's ``si_mem_available`` (mm/show_mem.c): MemFree less the
reserve, plus the file LRU (Active(file) + Inactive(file)) less min(half of it, low
watermark), plus SReclaimable less min(half of it, low watermark). The watermarks and
totalreserve_pages are not modelled per zone: one figure, 0.1% of MemTotal (at least 64 MiB),
stands in for both. When a scenario states ``mem_available``, that is the value for its
starting pods (``usage.starting_figures``); the difference from the estimate there is kept as
a fixed correction (hot page cache and reserves the scenario says cannot be had), so later
states move with the estimate: evicting a pod raises MemAvailable by about its working set
(its anon pages plus the file pages that were not already counted as reclaimable). The result
is clamped to ``[0, MemFree + file LRU + SReclaimable]``.

PSI (``/proc/pressure/memory``) is scaled by how tight memory is: the scenario's averages
apply while MemAvailable is at or below its starting value, fall linearly to 0 as
MemAvailable rises to ``RELIEF_SHARE`` (10%) of MemTotal, and stay 0 above. A node that
starts with 10% or more available keeps the scenario's numbers (its stalls are not about
running out of memory). All windows (avg10/60/300) scale alike, as if the diagnosis came
minutes after the change; the ``total`` counters are cumulative and stay as given.
"""

from __future__ import annotations

from dataclasses import dataclass

from gpunode_sandbox.kubesim import scenarios as sc
from gpunode_sandbox.kubesim.quantities import to_bytes
from gpunode_sandbox.kubesim.usage import Figures

KB = 1024
PAGE = 4096
MIB = 2**20
GIB = 2**30
RELIEF_SHARE = 0.10  # MemAvailable share of MemTotal at which memory stalls have gone
UDP_PAGES = 12  # sockstat "UDP: ... mem"; TCP pages come from the scenario


@dataclass(frozen=True)
class Parts:
    """The parts of a node's MemTotal, in bytes."""

    total: int
    anon: int
    shmem: int
    cached: int
    buffers: int
    srec: int
    sunrec: int
    stack: int
    ptables: int
    percpu: int
    vmalloc: int
    sockets: int
    inactive_file: int
    hugetlb: int = 0

    @property
    def free(self) -> int:
        used = self.anon + self.cached + self.buffers + self.srec + self.sunrec + self.sockets
        kernel = self.stack + self.ptables + self.percpu + self.vmalloc
        return self.total - used - kernel - self.hugetlb

    @property
    def file_lru(self) -> int:
        """Active(file) + Inactive(file): page cache less shmem, plus buffers."""
        return self.cached - self.shmem + self.buffers

    @property
    def low(self) -> int:
        """Stands in for the zones' low watermarks and totalreserve_pages."""
        return max(64 * MIB, self.total // 1000)


def _pages(q: sc.Quantity) -> int:
    """Bytes rounded down to whole pages, so every meminfo line is exact in kB."""
    b = to_bytes(q)
    return b - b % PAGE


def parts(node: sc.Node, pods: Figures) -> Parts:
    """The node's memory with ``pods`` (summed figures) on it; ValueError when it overflows."""
    k = node.kernel
    page_cache, k_shmem = _pages(k.page_cache), _pages(k.shmem)
    cached = _pages(pods.file) + page_cache + k_shmem
    shmem = _pages(pods.shmem) + k_shmem
    buffers = _pages(k.buffers)
    inactive = _pages(pods.inactive_file) + _pages(page_cache // 2)
    p = Parts(
        total=_pages(node.capacity.get("memory", "0")),
        anon=_pages(pods.anon) + _pages(k.system_anon),
        shmem=shmem,
        cached=cached,
        buffers=buffers,
        srec=_pages(k.slab_reclaimable),
        sunrec=_pages(k.slab_unreclaimable),
        stack=_pages(k.kernel_stack),
        ptables=_pages(k.page_tables),
        percpu=_pages(k.percpu),
        vmalloc=_pages(k.other),
        sockets=socket_bytes(node),
        inactive_file=min(cached - shmem + buffers, inactive),
        hugetlb=hugetlb_bytes(node),
    )
    if p.free < 0:
        raise ValueError(
            f"node {node.name}: scenario memory ({p.total - p.free} bytes) exceeds MemTotal "
            f"({p.total}); lower usage or raise capacity.memory"
        )
    return p


def estimate_available(p: Parts) -> int:
    """The kernel's si_mem_available with one reserve figure (see the module docstring)."""
    pagecache = p.file_lru - min(p.file_lru // 2, p.low)
    reclaimable = p.srec - min(p.srec // 2, p.low)
    return max(0, p.free - p.low + pagecache + reclaimable)


def available(node: sc.Node, pods: Figures, *, start: Figures) -> int:
    """MemAvailable with ``pods`` on the node; ``start``: the scenario's starting pods."""
    now = parts(node, pods)
    estimate = estimate_available(now)
    if node.kernel.mem_available is None:
        return estimate
    stated = to_bytes(node.kernel.mem_available)
    base = parts(node, start)
    if stated > base.free + base.file_lru + base.srec:
        raise ValueError(
            f"node {node.name}: mem_available exceeds free + page cache + reclaimable slab"
        )
    correction = stated - estimate_available(base)
    return min(now.free + now.file_lru + now.srec, max(0, estimate + correction))


def pressure_scale(node: sc.Node, pods: Figures, *, start: Figures) -> float:
    """Factor (0..1) applied to the scenario's PSI averages (see the module docstring)."""
    total = parts(node, pods).total
    relief = total * RELIEF_SHARE
    at_start = available(node, start, start=start)
    now = available(node, pods, start=start)
    if at_start >= relief or now <= at_start:
        return 1.0
    return max(0.0, (relief - now) / (relief - at_start))


def pressure_text(pr: sc.Pressure, scale: float) -> str:
    """``/proc/pressure/memory`` with the averages multiplied by ``scale``."""
    s = scale
    return (
        f"some avg10={pr.some_avg10 * s:.2f} avg60={pr.some_avg60 * s:.2f} "
        f"avg300={pr.some_avg300 * s:.2f} total={pr.some_total_us}\n"
        f"full avg10={pr.full_avg10 * s:.2f} avg60={pr.full_avg60 * s:.2f} "
        f"avg300={pr.full_avg300 * s:.2f} total={pr.full_total_us}\n"
    )


def meminfo(node: sc.Node, pods: Figures, *, start: Figures) -> dict[str, int]:
    """Node meminfo in bytes (every standard key); ValueError when the figures do not fit."""
    p = parts(node, pods)
    file_lru, inactive_file = p.file_lru, p.inactive_file
    k = node.kernel
    # locked pages (mlock, CUDA's pinned host buffers) leave the anon LRU for the unevictable
    # list: Mlocked and Unevictable, still in AnonPages
    mlocked = _pages(pods.mlocked) + _pages(k.mlocked)
    anon_lru = p.anon + p.shmem - mlocked
    active_anon = int(anon_lru * 0.9)
    pool = node.hugepages[0] if node.hugepages else None
    return {
        "MemTotal": p.total,
        "MemFree": p.free,
        "MemAvailable": available(node, pods, start=start),
        "Buffers": p.buffers,
        "Cached": p.cached,
        "SwapCached": 0,
        "Active": active_anon + file_lru - inactive_file,
        "Inactive": anon_lru - active_anon + inactive_file,
        "Active(anon)": active_anon,
        "Inactive(anon)": anon_lru - active_anon,
        "Active(file)": file_lru - inactive_file,
        "Inactive(file)": inactive_file,
        "Unevictable": mlocked,
        "Mlocked": mlocked,
        "SwapTotal": 0,
        "SwapFree": 0,
        "Zswap": 0,
        "Zswapped": 0,
        "Dirty": _pages(pods.dirty) + _pages(k.dirty),
        "Writeback": _pages(pods.writeback) + _pages(k.writeback),
        "AnonPages": p.anon,
        "Mapped": pods.file // 4 + 512 * MIB,
        "Shmem": p.shmem,
        "KReclaimable": p.srec,
        "Slab": p.srec + p.sunrec,
        "SReclaimable": p.srec,
        "SUnreclaim": p.sunrec,
        "KernelStack": p.stack,
        "PageTables": p.ptables,
        "SecPageTables": 0,
        "NFS_Unstable": 0,
        "Bounce": 0,
        "WritebackTmp": 0,
        "CommitLimit": (p.total - p.hugetlb) // 2,  # vm_commit_limit: ratio 50, no swap
        "Committed_AS": p.anon + p.shmem + 8 * GIB,
        "VmallocTotal": 34359738367 * KB,
        "VmallocUsed": p.vmalloc,
        "VmallocChunk": 0,
        "Percpu": p.percpu,
        "HardwareCorrupted": 0,
        "AnonHugePages": 0,
        "ShmemHugePages": 0,
        "ShmemPmdMapped": 0,
        "FileHugePages": 0,
        "FilePmdMapped": 0,
        "Unaccepted": 0,
        "HugePages_Total": pool.total if pool else 0,
        "HugePages_Free": pool.free_pages if pool else 0,
        "HugePages_Rsvd": pool.reserved if pool else 0,
        "HugePages_Surp": pool.surplus if pool else 0,
        "Hugepagesize": pool.page_bytes if pool else 2048 * KB,
        "Hugetlb": p.hugetlb,
        "DirectMap4k": 1 * GIB,
        "DirectMap2M": 64 * GIB,
        "DirectMap1G": max(0, p.total - 65 * GIB),
    }


def format_meminfo(values: dict[str, int]) -> str:
    lines = []
    for key, v in values.items():
        if key.startswith("HugePages_"):
            lines.append(f"{key + ':':<16}{v:>8}")
        else:
            lines.append(f"{key + ':':<16}{v // KB:>8} kB")
    return "\n".join(lines) + "\n"


def hugetlb_bytes(node: sc.Node) -> int:
    """meminfo ``Hugetlb``: every pool's pages (surplus included) times its page size.

    Hugetlb pages are taken from MemTotal but show in no other line (not AnonPages, not
    Shmem, not Cached): a reserved pool is memory gone, used or not.
    """
    return sum(pool.total * pool.page_bytes for pool in node.hugepages)


def socket_bytes(node: sc.Node) -> int:
    """Socket buffer memory (TCP + UDP ``mem`` pages of sockstat): in no meminfo line."""
    return (node.kernel.sock_tcp_pages + UDP_PAGES) * PAGE


def sockstat_text(tcp_pages: int) -> str:
    return (
        f"sockets: used 1843\nTCP: inuse 312 orphan 0 tw 41 alloc 356 mem {tcp_pages}\n"
        f"UDP: inuse 9 mem {UDP_PAGES}\nUDPLITE: inuse 0\nRAW: inuse 0\nFRAG: inuse 0 memory 0\n"
    )


def kb(b: int) -> str:
    """A ``/proc/PID/status`` value: kB right-aligned in 8 columns."""
    return f"{b // KB:>8} kB"


def process_files(pid: int, p: sc.Process, cgroup_text: str, *, ppid: int) -> dict[str, bytes]:
    """``proc/<pid>/...`` relative path -> content for one process."""
    anon, file, shm = to_bytes(p.rss_anon), to_bytes(p.rss_file), to_bytes(p.rss_shmem)
    huge = to_bytes(p.hugetlb)
    rss = anon + file + shm  # hugetlb pages are not in VmRSS
    vsz = rss + huge + 2 * GIB
    name = p.command[:15]
    status = (
        f"Name:\t{name}\nUmask:\t0022\nState:\tS (sleeping)\nTgid:\t{pid}\nNgid:\t0\n"
        f"Pid:\t{pid}\nPPid:\t{ppid}\nTracerPid:\t0\nUid:\t1000\t1000\t1000\t1000\n"
        f"Gid:\t1000\t1000\t1000\t1000\nFDSize:\t256\nGroups:\t1000\nNStgid:\t{pid}\n"
        f"NSpid:\t{pid}\nNSpgid:\t{pid}\nNSsid:\t{pid}\nVmPeak:\t{kb(vsz)}\n"
        f"VmSize:\t{kb(vsz)}\nVmLck:\t{kb(0)}\nVmPin:\t{kb(0)}\nVmHWM:\t{kb(rss)}\n"
        f"VmRSS:\t{kb(rss)}\nRssAnon:\t{kb(anon)}\nRssFile:\t{kb(file)}\n"
        f"RssShmem:\t{kb(shm)}\nVmData:\t{kb(anon + MIB)}\nVmStk:\t{kb(132 * KB)}\n"
        f"VmExe:\t{kb(4 * MIB)}\nVmLib:\t{kb(60 * MIB)}\nVmPTE:\t{kb(rss // 512)}\n"
        f"VmSwap:\t{kb(0)}\nHugetlbPages:\t{kb(huge)}\nCoreDumping:\t0\nTHP_enabled:\t1\n"
        f"Threads:\t16\nSigQ:\t0/1030000\n"
    )
    page = 4096
    statm = (
        f"{vsz // page} {rss // page} {(file + shm) // page} {4 * MIB // page} 0 "
        f"{(anon + MIB) // page} 0\n"
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
        f"FilePmdMapped:  {kb(0)}\nShared_Hugetlb: {kb(huge)}\nPrivate_Hugetlb:{kb(0)}\n"
        f"Swap:           {kb(0)}\nSwapPss:        {kb(0)}\nLocked:         {kb(0)}\n"
    )
    args = (p.cmdline or p.command).split()
    base = f"proc/{pid}"
    return {
        f"{base}/status": status.encode(),
        f"{base}/statm": statm.encode(),
        f"{base}/smaps_rollup": smaps.encode(),
        f"{base}/comm": (name + "\n").encode(),
        f"{base}/cmdline": b"".join(a.encode() + b"\0" for a in args),
        f"{base}/cgroup": cgroup_text.encode(),
    }
