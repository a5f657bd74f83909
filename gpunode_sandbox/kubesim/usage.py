"""Which scenario figures describe a live pod's containers (for metrics and host trees).

A pod's workload is found through its ownerReferences (ReplicaSet -> Deployment), so pods
created later by rollouts keep their workload's memory figures. Usage is clamped just under
the container's *current* memory limit: after a tier-3 patch halves a limit, the new pod
cannot hold more than its cgroup allows.

``starting_figures`` sums the figures of the pods a scenario places on a node when it is
loaded: the state the scenario's node-level numbers (``mem_available``, ``pressure``) were
written for. Host trees compare the pods present now against it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from gpunode_sandbox.kubesim import scenarios as sc
from gpunode_sandbox.kubesim.quantities import to_bytes, to_millicores

if TYPE_CHECKING:
    from gpunode_sandbox.kubesim.sim import KubeSim

Obj = dict[str, Any]
CLAMP = 0.995  # a pod squeezed by a lower limit runs just under it
PAGE = 4096


def _pages(b: int) -> int:
    """``b`` rounded down to whole pages (memory is handed out in pages)."""
    return b - b % PAGE


@dataclass(frozen=True)
class Figures:
    anon: int
    file: int
    inactive_file: int
    shmem: int
    kernel: int
    cpu_m: int
    processes: tuple[sc.Process, ...]
    mlocked: int = 0
    dirty: int = 0
    writeback: int = 0

    @property
    def usage(self) -> int:
        return self.anon + self.file + self.kernel

    @property
    def working_set(self) -> int:
        return max(0, self.usage - self.inactive_file)


ZERO = Figures(0, 0, 0, 0, 0, 0, ())


def add(a: Figures, b: Figures) -> Figures:
    """The sum of two cgroups' figures (processes are not carried: a parent has none)."""
    return Figures(
        a.anon + b.anon,
        a.file + b.file,
        a.inactive_file + b.inactive_file,
        a.shmem + b.shmem,
        a.kernel + b.kernel,
        a.cpu_m + b.cpu_m,
        (),
        a.mlocked + b.mlocked,
        a.dirty + b.dirty,
        a.writeback + b.writeback,
    )


@dataclass
class _Index:
    """A list of workloads indexed: by (kind, name, namespace) and by (owner kind, owner
    name, namespace, name), the first of each in list order (what a scan in order finds
    first), each workload's running containers by name, and a container's figures under
    a limit (both filled as asked; ``container_figures`` is pure, and a workload's containers
    live as long as the index holds the list)."""

    workloads: list[sc.Workload]
    by_key: dict[tuple[str, str, str], sc.Workload]
    by_owner: dict[tuple[str, str, str, str | None], sc.Workload]
    containers: dict[int, dict[str, sc.Container]] = field(default_factory=dict)
    figures: dict[tuple[int, Any], Figures] = field(default_factory=dict)

    def container_figures(self, c: sc.Container, limit: sc.Quantity | None) -> Figures:
        """``container_figures(c, limit)`` for a container of one of these workloads."""
        key = (id(c), limit)
        found = self.figures.get(key)
        if found is None:
            found = self.figures[key] = container_figures(c, limit)
        return found


#: the last scenario's workloads indexed, built once per list of workloads, not scanned once
#: per pod (a metrics list of 150,000 pods scanned 200 workloads per pod: half its time)
_INDEX: _Index | None = None


def _workload_index(workloads: list[sc.Workload]) -> _Index:
    global _INDEX
    held = _INDEX
    if held is None or held.workloads is not workloads:
        held = _Index(workloads, {}, {})
        for w in workloads:
            held.by_key.setdefault((w.kind, w.name, w.namespace), w)
            if (o := w.owner) is not None:
                held.by_owner.setdefault((o.kind, o.name, w.namespace, w.name), w)
        _INDEX = held
    return held


def _running_by_name(index: _Index, w: sc.Workload | None) -> dict[str, sc.Container]:
    """``w``'s running containers by name (shared: never mutate it)."""
    if w is None:
        return {}
    found = index.containers.get(id(w))
    if found is None:
        found = index.containers[id(w)] = {c.name: c for c in w.running_containers()}
    return found


def workload_of(sim: KubeSim, pod: Obj) -> sc.Workload | None:
    """The scenario workload a pod was seeded from or whose controller made it: through its
    controller chain (ReplicaSet -> Deployment), or, for a pod a custom resource owns
    directly (a PyTorchJob's, MPIJob's, Volcano Job's or RayCluster's pod), the bare-Pod
    workload of that name and owner."""
    index = _workload_index(sim.scenario.workloads)
    by_key, by_owner = index.by_key, index.by_owner
    ns = pod["metadata"].get("namespace", "")
    pod_name = pod["metadata"]["name"]
    w = by_key.get(("Pod", pod_name, ns))
    if w is not None:
        return w
    kind, name = "Pod", pod_name
    for ref in pod["metadata"].get("ownerReferences") or []:
        if ref.get("controller"):
            kind, name = ref["kind"], ref["name"]
            if kind == "ReplicaSet":
                rs = sim.api.store.get("replicasets", ns, name)
                for r2 in (rs or {}).get("metadata", {}).get("ownerReferences") or []:
                    kind, name = r2["kind"], r2["name"]
    w = by_key.get((kind, name, ns))
    if w is not None:
        return w
    # a pod a custom resource owns directly (a PyTorchJob's or Ray's pods): the scenario
    # workload that custom resource owns, told apart by the pod's ``app`` label
    app = (pod["metadata"].get("labels") or {}).get("app")
    return by_owner.get((kind, name, ns, app))


def replicasets_read(pod: Obj) -> list[tuple[str, str]]:
    """The keys of the ReplicaSets ``workload_of`` reads for ``pod`` (its controller
    references' that are ReplicaSets). Besides them it reads only the pod itself and the
    scenario's workloads: what a reader that keeps ``figures`` must check (keep the two in
    step; ``metrics.PodMetricTexts`` checks against a fresh computation under the suite's
    ``KUBESIM_CHECK_ENCODED``)."""
    ns = pod["metadata"].get("namespace", "")
    return [
        (ns, ref["name"])
        for ref in pod["metadata"].get("ownerReferences") or []
        if ref.get("controller") and ref["kind"] == "ReplicaSet"
    ]


def container_figures(c: sc.Container, limit: sc.Quantity | None) -> Figures:
    """Figures of scenario container ``c`` running under memory ``limit`` (None: no limit)."""
    u = c.usage
    anon, file, kernel = to_bytes(u.anon), to_bytes(u.file), to_bytes(u.kernel)
    shmem = to_bytes(u.shmem)
    mlocked, dirty, writeback = to_bytes(u.mlocked), to_bytes(u.dirty), to_bytes(u.writeback)
    inactive = to_bytes(u.inactive_file) if u.inactive_file is not None else (file - shmem) // 2
    procs = tuple(c.processes)
    if limit is not None:
        cap = int(to_bytes(limit) * CLAMP)
        total = anon + file + kernel
        if total > cap:
            scale = cap / total
            anon, file = _pages(int(anon * scale)), _pages(int(file * scale))
            shmem = min(shmem, file)
            inactive = min(inactive, file - shmem)
            mlocked = min(mlocked, anon)
            dirty = min(dirty, file - shmem)
            writeback = min(writeback, file - shmem - dirty)
            procs = tuple(
                p.model_copy(update={"rss_anon": _pages(int(to_bytes(p.rss_anon) * scale))})
                for p in procs
            )
    return Figures(
        anon, file, inactive, shmem, kernel, to_millicores(u.cpu), procs, mlocked, dirty, writeback
    )


def figures(sim: KubeSim, pod: Obj) -> dict[str, Figures]:
    """Container name -> figures, for every container of ``pod`` (defaults if unknown)."""
    index = _workload_index(sim.scenario.workloads)
    by_name = _running_by_name(index, workload_of(sim, pod))
    out: dict[str, Figures] = {}
    # the limit the kubelet enforces: the actuated one (status) when a resize is in play
    actuated = {
        cs.get("name"): cs["resources"]
        for cs in (pod.get("status") or {}).get("containerStatuses") or []
        if "resources" in cs
    }
    for c in running_specs(pod):
        resources: Obj = actuated.get(c["name"]) or c.get("resources") or {}
        limit = (resources.get("limits") or {}).get("memory")
        known = by_name.get(c["name"])
        out[c["name"]] = (
            container_figures(sc.Container(name=c["name"]), limit)
            if known is None
            else index.container_figures(known, limit)
        )
    return out


def running_specs(pod: Obj) -> list[Obj]:
    """The pod spec's containers that run (and hold memory): containers and native sidecars
    (init containers with ``restartPolicy: Always``)."""
    sidecars = [
        c for c in pod["spec"].get("initContainers") or [] if c.get("restartPolicy") == "Always"
    ]
    return [*pod["spec"]["containers"], *sidecars]


def replicas_on(w: sc.Workload, node: str, all_nodes: list[str]) -> int:
    """How many of ``w``'s pods ``workloads.Placement`` puts on ``node`` (without naming them:
    this runs for every host tree, on fleets of 60,000 pods)."""
    if w.kind == "DaemonSet":
        return int(node in (w.nodes or all_nodes))
    targets: list[str | None] = list(w.nodes) or [None]
    count = 1 if w.kind == "Pod" else w.replicas
    return sum(1 for i in range(count) if targets[i % len(targets)] == node)


def starting_figures(scenario: sc.Scenario, node: str) -> Figures:
    """The summed figures of the Running pods ``scenario`` places on ``node`` when loaded.

    Same placement as ``workloads.Placement`` and the same clamp as ``figures``, so for a
    freshly seeded sim it equals the sum of ``figures`` over the node's Running pods.
    """
    all_nodes = [n.name for n in scenario.nodes]
    total = ZERO
    for w in scenario.workloads:
        placed = replicas_on(w, node, all_nodes) if w.phase == "Running" else 0
        for c in w.running_containers() if placed else ():
            f = container_figures(c, c.limits.get("memory"))
            for _ in range(placed):
                total = add(total, f)
    return total
