"""The kernel log a node's collector reads: ``dev/kmsg`` text in the kernel's own formats.

``kmsg_text(node, placed, layout, now=...)`` renders a scenario node's ``kernel_log`` events as
``/dev/kmsg`` records (``prio,seq,usec,flags;message``, continuation lines for the device
dictionary), after a few ordinary boot records, and ``proc_stat_btime`` the boot time the
collector adds to each record's stamp. Formats mirror the kernel's mm/oom_kill.c
(``invoked oom-killer``, the ``oom-kill:constraint=...`` summary line, ``Out of memory:`` /
``Memory cgroup out of memory: Killed process ...``) and the NVIDIA driver's
``NVRM: Xid (PCI:dddd:bb:dd): N, pid=..., name=..., <text>``. Pure: returns text.

``placed`` maps ``(namespace, pod name, container)`` to where the host tree put it (pod UID,
QoS, container id, first host PID), so a kill names the victim's real cgroup path.
"""

from __future__ import annotations

from dataclasses import dataclass

from gpunode_sandbox.kubesim import scenarios as sc
from gpunode_sandbox.kubesim.cgroupfiles import Layout
from gpunode_sandbox.kubesim.defaults import stable_uid
from gpunode_sandbox.kubesim.quantities import to_bytes

#: driver texts for the XID codes the scenarios use (the driver appends a description)
XID_TEXT = {
    13: "Graphics SM Warp Exception on (GPC 0, TPC 0, SM 0): Out Of Range Address",
    31: "Ch 00000008, intr 00000000. MMU Fault: ENGINE GRAPHICS GPC0 GPCCLIENT_T1_0 faulted "
    "@ 0x7f1a_2b000000. Fault is of type FAULT_PDE ACCESS_TYPE_VIRT_READ",
    43: "Ch 00000010",
    45: "Ch 00000010",
    48: "An uncorrectable double bit error (DBE) has been detected on GPU in the framebuffer "
    "at partition 6, subpartition 0.",
    63: "Row Remapper: New row marked for remapping, reset gpu to activate.",
    64: "Row Remapper: Failed to remap a row.",
    74: "NVLink: fatal error detected on link 3(0x0, 0x0, 0x10000, 0x0, 0x0, 0x0, 0x0)",
    79: "GPU has fallen off the bus.",
    92: "High single-bit ECC error rate detected",
    94: "Contained: SM (0x1). RST: No, D-RST: No",
    95: "Uncontained: FBHUB. RST: Yes, D-RST: No",
    119: "Timeout after 6s of waiting for RPC response from GPU0 GSP! Expected function 76 "
    "(GSP_RM_CONTROL) (0x2080014b 0x5).",
}
_KERN_ERR, _KERN_WARNING, _KERN_INFO = 3, 4, 6


@dataclass(frozen=True)
class Placed:
    uid: str
    qos: str
    container_id: str
    pid: int


def _escape(text: str) -> str:
    """Non-printable bytes as ``\\xNN``, as the kernel writes them to /dev/kmsg."""
    out = []
    for byte in text.encode("utf-8"):
        out.append(chr(byte) if 32 <= byte < 127 and byte != 92 else f"\\x{byte:02x}")
    return "".join(out)


class _Log:
    def __init__(self) -> None:
        self.lines: list[str] = []
        self.seq = 0

    def add(
        self, level: int, usec: int, message: str, *, facility: int = 0, extra: str = ""
    ) -> None:
        self.lines.append(f"{facility * 8 + level},{self.seq},{usec},-;{_escape(message)}")
        if extra:
            self.lines.append(extra)
        self.seq += 1


def _victim(
    event: sc.KernelEvent, node: sc.Node, placed: dict[tuple[str, str, str], Placed]
) -> tuple[str, int, Placed | None]:
    """(container name, pid, placement) of the pod the event names (its first match)."""
    ns, _, workload = (event.workload or "").rpartition("/")
    for (pns, pod, cname), where in sorted(placed.items()):
        same_pod = pns == (ns or pns) and (pod == workload or pod.startswith(workload + "-"))
        if same_pod and event.container in (None, cname):
            return cname, event.pid or where.pid, where
    return event.container or "", event.pid or 2_299_000, None


def _memcg_paths(
    event: sc.KernelEvent, layout: Layout, where: Placed | None, node: sc.Node
) -> tuple[str, str]:
    if where is None:  # a pod that has left the node: its cgroup path, with no API object
        uid = stable_uid("gone", node.name, event.workload or "")
        cid = stable_uid("gone-cid", node.name, event.workload or "").replace("-", "") * 2
        task = "/" + layout.container_dir("burstable", uid, cid[:64])
        return "/" + layout.pod_dir("burstable", uid), task
    task = "/" + layout.container_dir(where.qos, where.uid, where.container_id)
    if event.limit == "pod":
        return "/" + layout.pod_dir(where.qos, where.uid), task
    if event.limit == "kubepods":
        return "/" + ("kubepods.slice" if layout.driver == "systemd" else "kubepods"), task
    return task, task


def _oom(
    log: _Log,
    usec: int,
    event: sc.KernelEvent,
    node: sc.Node,
    layout: Layout,
    placed: dict[tuple[str, str, str], Placed],
) -> None:
    _container, pid, where = _victim(event, node, placed)
    comm = event.command[:15]
    oom_memcg, task_memcg = _memcg_paths(event, layout, where, node)
    anon, file_ = to_bytes(event.anon_rss) // 1024, to_bytes(event.file_rss) // 1024
    total_vm = anon + file_ + 4 * 1024 * 1024
    invoker = event.invoked_by or comm
    log.add(
        _KERN_WARNING,
        usec,
        f"{invoker} invoked oom-killer: gfp_mask=0x140cca(GFP_HIGHUSER_MOVABLE|__GFP_COMP),"
        f" order=0, oom_score_adj={event.oom_score_adj}",
    )
    log.add(
        _KERN_WARNING,
        usec + 12,
        f"CPU: 17 PID: {pid} Comm: {invoker} Not tainted {node.kernel_version} #47-Ubuntu",
    )
    log.add(_KERN_WARNING, usec + 40, "Call Trace:")
    log.add(_KERN_WARNING, usec + 41, " <TASK>")
    log.add(_KERN_WARNING, usec + 42, " dump_stack_lvl+0x48/0x70")
    log.add(_KERN_WARNING, usec + 43, " dump_header+0x50/0x1f0")
    log.add(_KERN_WARNING, usec + 44, " oom_kill_process+0x10d/0x1c0")
    log.add(_KERN_WARNING, usec + 45, " out_of_memory+0x103/0x350")
    log.add(_KERN_WARNING, usec + 46, " </TASK>")
    if event.scope == "cgroup":
        log.add(
            _KERN_INFO,
            usec + 60,
            f"memory: usage {anon + file_}kB, limit {anon + file_}kB, failcnt 1842",
        )
    log.add(_KERN_INFO, usec + 80, "Tasks state (memory values in pages):")
    log.add(
        _KERN_INFO,
        usec + 81,
        "[  pid  ]   uid  tgid total_vm      rss pgtables_bytes swapents oom_score_adj name",
    )
    memcg = f",oom_memcg={oom_memcg}" if event.scope == "cgroup" else ",global_oom"
    constraint = "CONSTRAINT_MEMCG" if event.scope == "cgroup" else "CONSTRAINT_NONE"
    cpuset = (where.container_id if where else "/") if layout.version == 1 else "/"
    log.add(
        _KERN_INFO,
        usec + 90,
        f"oom-kill:constraint={constraint},nodemask=(null),cpuset={cpuset},mems_allowed=0-1"
        f"{memcg},task_memcg={task_memcg},task={comm},pid={pid},uid={event.uid}",
    )
    prefix = "Memory cgroup out of memory" if event.scope == "cgroup" else "Out of memory"
    log.add(
        _KERN_ERR,
        usec + 95,
        f"{prefix}: Killed process {pid} ({comm}) total-vm:{total_vm}kB, anon-rss:{anon}kB,"
        f" file-rss:{file_}kB, shmem-rss:0kB, UID:{event.uid} pgtables:{anon // 512}kB"
        f" oom_score_adj:{event.oom_score_adj}",
    )
    log.add(
        _KERN_INFO,
        usec + 400_000,
        f"oom_reaper: reaped process {pid} ({comm}), now anon-rss:0kB, file-rss:0kB, shmem-rss:0kB",
    )


def _xid(log: _Log, usec: int, event: sc.KernelEvent, bus_ids: list[str]) -> None:
    bus = (
        bus_ids[event.gpu] if event.gpu < len(bus_ids) else f"00000000:{0xE0 + event.gpu:02X}:00.0"
    )
    legacy = bus[-12:-2].lower()  # "0000:3b:00": the driver prints domain:bus:device
    text = event.message or XID_TEXT.get(event.code, "Unknown error")
    who = (
        f"pid={event.pid}, name={event.command}" if event.pid else "pid='<unknown>', name=<unknown>"
    )
    log.add(
        _KERN_WARNING,
        usec,
        f"NVRM: Xid (PCI:{legacy}): {event.code}, {who}, {text}",
        extra=" SUBSYSTEM=pci\n DEVICE=+pci:" + bus[-12:].lower(),
    )
    if event.code == 79:
        log.add(_KERN_ERR, usec + 9, f"NVRM: GPU {bus[-12:].lower()}: GPU has fallen off the bus.")


def kmsg_text(
    node: sc.Node,
    placed: dict[tuple[str, str, str], Placed],
    layout: Layout,
    *,
    uptime_s: int,
    bus_ids: list[str],
) -> str:
    """``/dev/kmsg`` text: boot records, then the node's kernel events in time order."""
    log = _Log()
    log.add(
        _KERN_INFO - 1,
        0,
        f"Linux version {node.kernel_version} (buildd@lcy02-amd64-100) #47-Ubuntu SMP",
    )
    log.add(
        _KERN_INFO,
        0,
        f"Command line: BOOT_IMAGE=/vmlinuz-{node.kernel_version} root=/dev/nvme0n1p2 ro",
    )
    log.add(_KERN_INFO, 4_210_331, "nvidia: loading out-of-tree module taints kernel.")
    events = sorted(node.kernel_log, key=lambda e: -e.age_s)
    for event in events:
        usec = max(uptime_s - event.age_s, 1) * 1_000_000
        if event.kind == "oom_kill":
            _oom(log, usec, event, node, layout, placed)
        else:
            _xid(log, usec, event, bus_ids)
    return "\n".join(log.lines) + "\n"


def uptime_for(node: sc.Node) -> int:
    """Seconds since boot: three days past the oldest event (deterministic per scenario)."""
    oldest = max((e.age_s for e in node.kernel_log), default=0)
    return oldest + 3 * 24 * 3600
