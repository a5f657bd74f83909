"""Points from the kernel's own record: a GPU lost to a hardware fault (XID) and OOM kills
with their victim. Pure: no I/O.

Keys: ai.gpu_hardware_fault, ops.gpu_hardware_fault, ai.cgroup_oom_kill,
ops.global_oom_kill.
"""

from __future__ import annotations

from bot.core.diagnosis.findings import Diagnosis, TalkingPoint
from bot.core.model.cluster import ClusterView
from bot.core.reporting.points.common import Codes, known_pod, per_finding, pick, point

_XID = ("gpu_index", "pci_bus_id", "code", "meaning", "last_at", "action")
_KILL = ("comm", "pid", "killed_at", "pod", "container", "anon_rss_bytes", "limit_level")


def kernel_log_points(
    d: Diagnosis, view: ClusterView | None, *, codes: Codes
) -> list[TalkingPoint]:
    """A lost GPU clears the AI team's code and tells ops what to do; the latest global kill
    goes to ops, each cgroup kill of a known pod to the AI team (it hit its own limit)."""
    out: list[TalkingPoint] = []
    out += per_finding(
        codes,
        "GPU_XID",
        ("ai_team", "ai.gpu_hardware_fault", "supports"),
        ("ops_team", "ops.gpu_hardware_fault", "contradicts"),
        keys=_XID,
        when=lambda f: f.severity == "critical",
    )
    kills = codes.get("KERNEL_OOM_KILL", [])
    global_kills = [f for f in kills if f.params.get("scope") == "node"]
    if global_kills:
        last = max(global_kills, key=lambda f: str(f.params.get("killed_at", "")))
        out.append(
            point("ops_team", "ops.global_oom_kill", "supports", last.facts, pick(last, *_KILL))
        )
    out += per_finding(
        codes,
        "KERNEL_OOM_KILL",
        ("ai_team", "ai.cgroup_oom_kill", "neutral"),
        keys=_KILL,
        when=lambda f: (
            f.params.get("scope") == "cgroup" and known_pod(str(f.params.get("pod", "")), view)
        ),
    )
    return out
