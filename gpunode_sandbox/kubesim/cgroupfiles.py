"""Cgroup paths and file contents for pods and containers (v1 or v2, systemd or cgroupfs,
containerd / CRI-O / docker), as the kubelet and runtimes name them (reference/kubernetes.md
section 5). Pure: returns ``relative path -> text`` mappings.
"""

from __future__ import annotations

from dataclasses import dataclass

from gpunode_sandbox.kubesim.usage import Figures

V1_UNLIMITED = 9223372036854771712  # what cgroup v1 reports for "no limit"


@dataclass(frozen=True)
class Layout:
    version: int
    driver: str
    runtime: str

    def pod_dir(self, qos: str, uid: str) -> str:
        q = qos.lower()
        if self.driver == "systemd":
            u = uid.replace("-", "_")
            if q == "guaranteed":
                return f"kubepods.slice/kubepods-pod{u}.slice"
            return f"kubepods.slice/kubepods-{q}.slice/kubepods-{q}-pod{u}.slice"
        return f"kubepods/pod{uid}" if q == "guaranteed" else f"kubepods/{q}/pod{uid}"

    def container_dir(self, qos: str, uid: str, cid: str) -> str:
        if self.driver == "systemd":
            prefix = {"containerd": "cri-containerd", "cri-o": "crio", "docker": "docker"}
            leaf = f"{prefix[self.runtime]}-{cid}.scope"
        else:
            leaf = f"crio-{cid}" if self.runtime == "cri-o" else cid
        return f"{self.pod_dir(qos, uid)}/{leaf}"

    @property
    def mount(self) -> str:
        """Where memory files live under the host root."""
        return "sys/fs/cgroup" if self.version == 2 else "sys/fs/cgroup/memory"

    def proc_cgroup(self, path: str) -> str:
        """``/proc/PID/cgroup`` text for a process in ``path``."""
        if self.version == 2:
            return f"0::/{path}\n"
        ctrls = [
            "memory",
            "cpu,cpuacct",
            "pids",
            "blkio",
            "devices",
            "freezer",
            "hugetlb",
            "cpuset",
            "net_cls,net_prio",
            "perf_event",
            "rdma",
            "misc",
        ]
        lines = [f"{13 - i}:{c}:/{path}" for i, c in enumerate(ctrls)]
        return "\n".join([*lines, f"1:name=systemd:/{path}", "0::/"]) + "\n"

    def proc_cgroup_unit(self, path: str) -> str:
        """``/proc/PID/cgroup`` text for a process that systemd placed in ``path`` (a unit).

        v2: the one ``0::`` line. v1 (hybrid, as systemd sets it up): the controllers
        systemd delegates per unit (memory, pids, blkio, devices, cpu,cpuacct and its own
        ``name=systemd``) show the unit's path; the others stay at ``/``; the unified
        hierarchy's ``0::`` line follows the unit too.
        """
        if self.version == 2:
            return f"0::/{path}\n"
        unit_ctrls = {"memory", "cpu,cpuacct", "pids", "blkio", "devices"}
        ctrls = [
            "misc",
            "rdma",
            "hugetlb",
            "perf_event",
            "net_cls,net_prio",
            "freezer",
            "cpuset",
            "memory",
            "pids",
            "blkio",
            "devices",
            "cpu,cpuacct",
        ]
        lines = [
            f"{len(ctrls) + 1 - i}:{c}:{'/' + path if c in unit_ctrls else '/'}"
            for i, c in enumerate(ctrls)
        ]
        return "\n".join([*lines, f"1:name=systemd:/{path}", f"0::/{path}"]) + "\n"


def memory_files(layout: Layout, f: Figures, *, limit: int | None, ooms: int = 0) -> dict[str, str]:
    """The memory controller files of one cgroup with figures ``f``."""
    active_file = max(0, f.file - f.inactive_file)
    anon_active = int((f.anon - f.mlocked) * 0.9)  # locked pages are on the unevictable list
    slab = f.kernel // 2
    if layout.version == 2:
        stat = {
            "anon": f.anon,
            "file": f.file,
            "kernel": f.kernel,
            "kernel_stack": f.kernel // 8,
            "pagetables": f.kernel // 4,
            "sec_pagetables": 0,
            "percpu": f.kernel // 16,
            "sock": 0,
            "vmalloc": 0,
            "shmem": f.shmem,
            "file_mapped": f.file // 4,
            "file_dirty": f.dirty,
            "file_writeback": f.writeback,
            "anon_thp": 0,
            "inactive_anon": f.anon - f.mlocked - anon_active + f.shmem,
            "active_anon": anon_active,
            "inactive_file": f.inactive_file,
            "active_file": active_file - f.shmem if active_file > f.shmem else active_file,
            "unevictable": f.mlocked,
            "slab_reclaimable": slab // 2,
            "slab_unreclaimable": slab - slab // 2,
            "slab": slab,
            "pgfault": 0,
            "pgmajfault": 0,
            "oom_kill": ooms,
        }
        return {
            "memory.current": f"{f.usage}\n",
            "memory.max": f"{limit}\n" if limit is not None else "max\n",
            "memory.high": "max\n",
            "memory.low": "0\n",
            "memory.min": "0\n",
            "memory.swap.current": "0\n",
            "memory.stat": "".join(f"{k} {v}\n" for k, v in stat.items()),
            "memory.events": f"low 0\nhigh 0\nmax {ooms * 40}\noom {ooms}\noom_kill {ooms}\n"
            "oom_group_kill 0\n",
        }
    v1 = {
        "cache": f.file,
        "rss": f.anon,
        "rss_huge": 0,
        "shmem": f.shmem,
        "mapped_file": f.file // 4,
        "dirty": f.dirty,
        "writeback": f.writeback,
        "pgpgin": 0,
        "pgpgout": 0,
        "pgfault": 0,
        "pgmajfault": 0,
        "inactive_anon": f.anon - f.mlocked - anon_active + f.shmem,
        "active_anon": anon_active,
        "inactive_file": f.inactive_file,
        "active_file": max(0, active_file - f.shmem),
        "unevictable": f.mlocked,
        "hierarchical_memory_limit": limit if limit is not None else V1_UNLIMITED,
    }
    text = "".join(f"{k} {v}\n" for k, v in v1.items())
    text += "".join(f"total_{k} {v}\n" for k, v in v1.items() if k != "hierarchical_memory_limit")
    return {
        "memory.usage_in_bytes": f"{f.anon + f.file}\n",
        "memory.max_usage_in_bytes": f"{f.anon + f.file + f.kernel}\n",
        "memory.limit_in_bytes": f"{limit if limit is not None else V1_UNLIMITED}\n",
        "memory.stat": text,
        "memory.oom_control": f"oom_kill_disable 0\nunder_oom 0\noom_kill {ooms}\n",
        "memory.failcnt": f"{ooms * 40}\n",
        "memory.kmem.usage_in_bytes": f"{f.kernel}\n",
    }
