"""OOM kills as a real node reports them: node-problem-detector and the kubelet.

node-problem-detector's kernel monitor (``config/kernel-monitor.json``) has one temporary
rule, reason ``OOMKilling``, pattern ``Killed process \\d+ (.+) total-vm:\\d+kB, anon-rss:...``.
Its event message is the matched kernel line, which since 4.19 reads
``<why>: Killed process PID (COMM) total-vm:..kB, anon-rss:..kB, file-rss:..kB,
shmem-rss:..kB, UID:.. pgtables:..kB oom_score_adj:..`` with ``<why>`` "Out of memory" for a
global OOM and "Memory cgroup out of memory" for a cgroup at its limit (mm/oom_kill.c): the
rule matches both. NPD's exporter records it on ``Node/NAME`` with the node name as the UID,
source ``kernel-monitor``, type Warning.

The kubelet's OOM watcher (pkg/kubelet/oom) records ``SystemOOM`` only when the OOM's memcg is
the root (a global OOM): "System OOM encountered, victim process: COMM, pid: PID", source
``kubelet``, on the same node reference.
"""

from __future__ import annotations

from gpunode_sandbox.kubesim import scenarios as sc
from gpunode_sandbox.kubesim.quantities import to_bytes

_KIB = 1024


def kernel_line(kill: sc.OomKill) -> str:
    """The kernel's one-line OOM-kill report (what NPD puts in the event message)."""
    why = "Memory cgroup out of memory" if kill.scope == "cgroup" else "Out of memory"
    return (
        f"{why}: Killed process {kill.pid} ({kill.process[:15]}) "
        f"total-vm:{to_bytes(kill.total_vm) // _KIB}kB, "
        f"anon-rss:{to_bytes(kill.anon_rss) // _KIB}kB, "
        f"file-rss:{to_bytes(kill.file_rss) // _KIB}kB, "
        f"shmem-rss:{to_bytes(kill.shmem_rss) // _KIB}kB, "
        f"UID:{kill.uid} pgtables:{to_bytes(kill.pgtables) // _KIB}kB "
        f"oom_score_adj:{kill.oom_score_adj}"
    )


def oom_events(kill: sc.OomKill) -> list[sc.Event]:
    """The events one kill leaves: NPD's OOMKilling, plus the kubelet's SystemOOM when the
    OOM was global."""
    out = [
        sc.Event(
            namespace="default",
            kind="Node",
            name=kill.node,
            reason="OOMKilling",
            message=kernel_line(kill),
            component="kernel-monitor",
            host=kill.node,
            age_s=kill.age_s,
        )
    ]
    if kill.scope == "global":
        out.append(
            sc.Event(
                namespace="default",
                kind="Node",
                name=kill.node,
                reason="SystemOOM",
                message=f"System OOM encountered, victim process: {kill.process[:15]}, "
                f"pid: {kill.pid}",
                component="kubelet",
                host=kill.node,
                age_s=kill.age_s,
            )
        )
    return out
