"""Generate the host tree a node's collector reads: /proc and cgroup files, fake NVML spec.

``write_host_tree(sim, node_name, root)`` writes under ``root``:
- ``proc/meminfo`` (every standard key; MemTotal = MemFree + AnonPages + Cached + Buffers
  + Slab + KernelStack + PageTables + Percpu + VmallocUsed + sockstat's socket buffers,
  exactly), ``proc/pressure/memory``,
  ``proc/net/sockstat``, computed from the pods on the node *now* (evicted pods are gone,
  capped pods hold what their new limit allows; see ``procfiles`` for the model);
- ``proc/<pid>/{status,cmdline,comm,cgroup,statm,smaps_rollup}`` for every process of every
  running pod on the node and for the node's system processes (host PIDs, deterministic);
  a system process lives in its systemd unit (``system.slice/<unit>``) or the cgroup its
  scenario names (a user session, or the kubepods scope of a container whose pod is gone);
- ``proc/slabinfo`` (version 2.1) with the scenario's biggest caches, unless turned off;
- cgroup memory files for the kubepods hierarchy, QoS levels, pods and containers, in the
  node's cgroup version, driver and runtime (container ids match the pods'
  ``status.containerStatuses[].containerID``, pod UIDs match the API objects), and for the
  cgroups of system processes (their RSS: anon, file, shmem);
- ``nvml.json``, the fake NVML spec for GPU nodes (process PIDs = host PIDs; system
  processes' GPU memory is listed too: NVML does not know about pods);
- ``dev/kmsg`` (the kernel log, with the scenario's OOM kills and XIDs, see ``kmsgfiles``),
  ``proc/stat`` (``btime``) and ``proc/sys/kernel/dmesg_restrict``.
Returns the path of the NVML spec, or None for a node without GPUs.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gpunode_sandbox.fake_nvml import default_pci_bus_id
from gpunode_sandbox.kubesim import kmsgfiles, procfiles
from gpunode_sandbox.kubesim import scenarios as sc
from gpunode_sandbox.kubesim.cgroupfiles import Layout, memory_files
from gpunode_sandbox.kubesim.defaults import stable_uid
from gpunode_sandbox.kubesim.quantities import to_bytes
from gpunode_sandbox.kubesim.slabfiles import slabinfo_text
from gpunode_sandbox.kubesim.usage import (
    ZERO,
    Figures,
    add,
    figures,
    running_specs,
    starting_figures,
)

if TYPE_CHECKING:
    from gpunode_sandbox.kubesim.sim import KubeSim

Obj = dict[str, Any]
PID_BASE = 2_210_000  # container processes; system daemons start at 1100


def _w(root: Path, rel: str, text: str | bytes) -> None:
    p = root / rel
    p.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        p.write_bytes(text)
    else:
        p.write_text(text, encoding="utf-8")


def _write_all(root: Path, files: dict[str, bytes]) -> None:
    for rel, data in files.items():
        _w(root, rel, data)


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
    kube_dir = "kubepods.slice" if layout.driver == "systemd" else "kubepods"
    gpu_procs: dict[int, list[tuple[int, int]]] = {}
    placed: dict[tuple[str, str, str], kmsgfiles.Placed] = {}
    qos_totals = _write_system_processes(root, node, layout, gpu_procs, kube_dir=kube_dir)
    stale = add(add(qos_totals["burstable"], qos_totals["besteffort"]), qos_totals["guaranteed"])
    pid = PID_BASE
    node_total = ZERO
    for pod in _pods_on(sim, node_name):
        uid = pod["metadata"]["uid"]
        qos = (pod.get("status") or {}).get("qosClass", "BestEffort").lower()
        figs = figures(sim, pod)
        status = pod.get("status") or {}
        cids = {
            cs["name"]: cs.get("containerID", "").split("://")[-1]
            for key in ("containerStatuses", "initContainerStatuses")
            for cs in status.get(key) or []
        }
        pod_total = ZERO
        specs = {c["name"]: c for c in running_specs(pod)}
        for cname, f in figs.items():
            cid = cids.get(cname) or stable_uid("cid", uid, cname).replace("-", "") * 2
            cdir = layout.container_dir(qos, uid, cid)
            lim = _limit([specs[cname]])
            ooms = _ooms(sim, pod, cname)
            for fname, text in memory_files(layout, f, limit=lim, ooms=ooms).items():
                _w(root, f"{layout.mount}/{cdir}/{fname}", text)
            procs = f.processes or (sc.Process(command=cname[:15], cmdline=cname, rss_anon=f.anon),)
            meta = pod["metadata"]
            placed[(meta["namespace"], meta["name"], cname)] = kmsgfiles.Placed(uid, qos, cid, pid)
            parent = pid
            for proc in procs:
                files = procfiles.process_files(pid, proc, layout.proc_cgroup(cdir), ppid=parent)
                _write_all(root, files)
                for idx, used in proc.gpu_memory.items():
                    gpu_procs.setdefault(int(idx), []).append((pid, to_bytes(used)))
                pid += 1
            pid += 7  # runtimes leave gaps (shims, pause)
            pod_total = add(pod_total, f)
        pdir = layout.pod_dir(qos, uid)
        for fname, text in memory_files(
            layout, pod_total, limit=_limit(running_specs(pod))
        ).items():
            _w(root, f"{layout.mount}/{pdir}/{fname}", text)
        qos_totals[qos] = add(qos_totals[qos], pod_total)
        node_total = add(node_total, pod_total)
    for q in ("burstable", "besteffort"):
        qdir = f"{kube_dir}/kubepods-{q}.slice" if layout.driver == "systemd" else f"{kube_dir}/{q}"
        for fname, text in memory_files(layout, qos_totals[q], limit=None).items():
            _w(root, f"{layout.mount}/{qdir}/{fname}", text)
    alloc = to_bytes(node.allocatable.get("memory", node.capacity.get("memory", 0)))
    for fname, text in memory_files(layout, add(node_total, stale), limit=alloc).items():
        _w(root, f"{layout.mount}/{kube_dir}/{fname}", text)
    start = starting_figures(sim.scenario, node_name)
    values = procfiles.meminfo(node, node_total, start=start)
    _w(root, "proc/meminfo", procfiles.format_meminfo(values))
    scale = procfiles.pressure_scale(node, node_total, start=start)
    _w(root, "proc/pressure/memory", procfiles.pressure_text(node.pressure, scale))
    _w(root, "proc/net/sockstat", procfiles.sockstat_text(node.kernel.sock_tcp_pages))
    if node.kernel.slabinfo:
        _w(root, "proc/slabinfo", slabinfo_text(node.kernel))
    if layout.version == 2:
        _w(
            root,
            "sys/fs/cgroup/cgroup.controllers",
            "cpuset cpu io memory hugetlb pids rdma misc\n",
        )
    _kernel_log(root, node, layout, placed)
    if node.gpus is None:
        return None
    spec = nvml_spec(node.gpus, node.name, gpu_procs)
    path = root / "nvml.json"
    path.write_text(json.dumps(spec, indent=1), encoding="utf-8")
    return path


def _kernel_log(
    root: Path, node: sc.Node, layout: Layout, placed: dict[tuple[str, str, str], kmsgfiles.Placed]
) -> None:
    uptime = kmsgfiles.uptime_for(node)
    bus_ids = [default_pci_bus_id(i) for i in range(node.gpus.count if node.gpus else 0)]
    text = kmsgfiles.kmsg_text(node, placed, layout, uptime_s=uptime, bus_ids=bus_ids)
    _w(root, "dev/kmsg", text)
    _w(root, "proc/stat", f"cpu  0 0 0 0 0 0 0 0 0 0\nbtime {int(time.time()) - uptime}\n")
    _w(root, "proc/sys/kernel/dmesg_restrict", "1\n")


def _process_figures(p: sc.Process) -> Figures:
    """A system process's RSS as the memory figures of the cgroup it alone occupies."""
    anon, file, shm = to_bytes(p.rss_anon), to_bytes(p.rss_file), to_bytes(p.rss_shmem)
    return Figures(anon, file + shm, file // 2, shm, 4 * procfiles.MIB, 0, ())


def _write_system_processes(
    root: Path,
    node: sc.Node,
    layout: Layout,
    gpu_procs: dict[int, list[tuple[int, int]]],
    *,
    kube_dir: str,
) -> dict[str, Figures]:
    """Processes outside pods: proc files, their cgroups' memory files, their GPU memory.

    Returns, per QoS level, what the ones left in a kubepods scope (their pod is gone) hold:
    the kubepods and QoS cgroups' totals include it, as the kernel's hierarchical counters
    do (their pod-level cgroup is written here too).
    """
    by_cgroup: dict[str, Figures] = {}
    pid = 1100
    for p in node.system_processes:
        path = p.cgroup_path()
        in_kube = path.split("/", 1)[0] == kube_dir
        text = layout.proc_cgroup(path) if in_kube else layout.proc_cgroup_unit(path)
        _write_all(root, procfiles.process_files(pid, p, text, ppid=1))
        for idx, used in p.gpu_memory.items():
            gpu_procs.setdefault(int(idx), []).append((pid, to_bytes(used)))
        by_cgroup[path] = add(by_cgroup.get(path, ZERO), _process_figures(p))
        pid += 1
    stale = {"burstable": ZERO, "besteffort": ZERO, "guaranteed": ZERO}
    parents: dict[str, Figures] = {}
    for path, f in by_cgroup.items():
        if not path:
            continue  # the root cgroup has no memory.current / limit files
        for fname, text in memory_files(layout, f, limit=None).items():
            _w(root, f"{layout.mount}/{path}/{fname}", text)
        segments = path.split("/")
        if segments[0] == kube_dir and len(segments) > 2:
            qos = next((q for q in ("burstable", "besteffort") if q in path), "guaranteed")
            stale[qos] = add(stale[qos], f)
            parent = "/".join(segments[:-1])
            parents[parent] = add(parents.get(parent, ZERO), f)
    for path, f in parents.items():
        for fname, text in memory_files(layout, f, limit=None).items():
            _w(root, f"{layout.mount}/{path}/{fname}", text)
    return stale


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
                "pci_bus_id": default_pci_bus_id(i),
                **({"processes_error": "no_permission"} if g.mig else {}),
            }
        )
    return {
        "driver_version": g.driver_version,
        "memory_info_version": g.memory_info_version,
        "fail": g.fail,
        "devices": devices,
    }
