"""Which scenario figures describe a live pod's containers (for metrics and host trees).

A pod's workload is found through its ownerReferences (ReplicaSet -> Deployment), so pods
created later by rollouts keep their workload's memory figures. Usage is clamped just under
the container's *current* memory limit: after a tier-3 patch halves a limit, the new pod
cannot hold more than its cgroup allows.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from bot.sandbox.kubesim import scenarios as sc
from bot.sandbox.kubesim.quantities import to_bytes, to_millicores

if TYPE_CHECKING:
    from bot.sandbox.kubesim.sim import KubeSim

Obj = dict[str, Any]
CLAMP = 0.995  # a pod squeezed by a lower limit runs just under it


@dataclass(frozen=True)
class Figures:
    anon: int
    file: int
    inactive_file: int
    shmem: int
    kernel: int
    cpu_m: int
    processes: tuple[sc.Process, ...]

    @property
    def usage(self) -> int:
        return self.anon + self.file + self.kernel

    @property
    def working_set(self) -> int:
        return max(0, self.usage - self.inactive_file)


def workload_of(sim: KubeSim, pod: Obj) -> sc.Workload | None:
    ns = pod["metadata"].get("namespace", "")
    kind, name = "Pod", pod["metadata"]["name"]
    for ref in pod["metadata"].get("ownerReferences") or []:
        if ref.get("controller"):
            kind, name = ref["kind"], ref["name"]
            if kind == "ReplicaSet":
                rs = sim.api.store.get("replicasets", ns, name)
                for r2 in (rs or {}).get("metadata", {}).get("ownerReferences") or []:
                    kind, name = r2["kind"], r2["name"]
    for w in sim.scenario.workloads:
        if w.kind == kind and w.name == name and w.namespace == ns:
            return w
    return None


def figures(sim: KubeSim, pod: Obj) -> dict[str, Figures]:
    """Container name -> figures, for every container of ``pod`` (defaults if unknown)."""
    w = workload_of(sim, pod)
    by_name = {c.name: c for c in (w.containers if w else [])}
    out: dict[str, Figures] = {}
    for c in pod["spec"]["containers"]:
        sc_c = by_name.get(c["name"]) or sc.Container(name=c["name"])
        u = sc_c.usage
        anon, file, kernel = to_bytes(u.anon), to_bytes(u.file), to_bytes(u.kernel)
        inactive = to_bytes(u.inactive_file) if u.inactive_file is not None else file // 2
        shmem = to_bytes(u.shmem)
        procs = tuple(sc_c.processes)
        limit = ((c.get("resources") or {}).get("limits") or {}).get("memory")
        if limit is not None:
            cap = int(to_bytes(limit) * CLAMP)
            total = anon + file + kernel
            if total > cap:
                scale = cap / total
                anon, file = int(anon * scale), int(file * scale)
                inactive, shmem = min(inactive, file), min(shmem, file)
                procs = tuple(
                    p.model_copy(update={"rss_anon": int(to_bytes(p.rss_anon) * scale)})
                    for p in procs
                )
        out[c["name"]] = Figures(anon, file, inactive, shmem, kernel, to_millicores(u.cpu), procs)
    return out
