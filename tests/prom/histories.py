"""Planted memory histories as OpenMetrics text, one node per scenario shape.

Every shape is a few lines of arithmetic over time relative to the test's ``now`` (so the
blocks ``promtool tsdb create-blocks-from openmetrics`` writes are always inside the query
window), with seeded noise, under the label conventions the README documents
(node_exporter ``instance=NODE:9100``, cAdvisor ``node``, DCGM ``Hostname``, kube-state-metrics
``kube_pod_info{node}``). ``PLANTED`` is what the tests expect to find again.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass

GI = 1024**3
MI = 1024**2
H = 3600.0
SCRAPE_S = 15.0
SPAN_S = 6.5 * H  # a little more than the 6 h window


@dataclass(frozen=True)
class RunningPrometheus:
    url: str
    now_s: float


@dataclass(frozen=True)
class Planted:
    node: str
    series_key: str  # the series gpunode files the planted consumer under
    kind: str  # growth | step | flat
    since_ago_s: float | None  # the change point, seconds before now (None: window start)
    rate_gib_per_h: float
    jump_gib: float = 0.0


PLANTED = {
    # a slab leak: flat 6 GiB, then +28.8 GiB/h since 5 h ago, to the 150 GiB the slab-leak
    # scenario's snapshot shows (its global OOM kill follows)
    "slab_leak": Planted("gpu-node-01", "node:slab_unreclaimable", "growth", 5 * H, 28.8),
    # a DataLoader whose workers creep +0.5 GiB/h over the whole window
    "dataloader_creep": Planted("creep-node", "pod:ml-train/loader-0", "growth", None, 0.5),
    # a preprocessing spike: 5 GiB, then 45 GiB from 2 h ago on
    "sudden_spike": Planted("spike-node", "pod:data-prep/spike-0", "step", 2 * H, 0.0, 40.0),
    # a healthy node: everything flat
    "flat_healthy": Planted("healthy-node", "", "flat", None, 0.0),
}


#: per-pod GPU memory dcgm-exporter reports on mig-node-01 through Prometheus:
#: (pod, GPU instance, MiB used)
DCGM_PODS = (("small-llm-a", "1", 8192.0), ("small-llm-b", "2", 6144.0))


def _constant(value: float) -> Callable[[float], float]:
    return lambda ago: value


def _ramp(since_ago: float, rate_gib_h: float) -> Callable[[float], float]:
    return lambda ago: max(0.0, since_ago - ago) * rate_gib_h * GI / H


class _Writer:
    def __init__(self, now_s: float, seed: int) -> None:
        self.now_s = now_s
        self.rng = random.Random(seed)
        self.families: dict[str, tuple[str, list[str]]] = {}

    def series(
        self,
        name: str,
        labels: dict[str, str],
        value: Callable[[float], float],
        *,
        kind: str = "gauge",
        noise: float = 0.0,
        integer: bool = False,
    ) -> None:
        family = name[: -len("_total")] if kind == "counter" else name
        _, lines = self.families.setdefault(family, (kind, []))
        text = ",".join(f'{k}="{v}"' for k, v in sorted(labels.items()))
        ago = SPAN_S
        while ago >= SCRAPE_S:
            v = value(ago) + (self.rng.gauss(0, noise) if noise else 0.0)
            shown = f"{round(v)}" if integer else f"{v:.1f}"
            lines.append(f"{name}{{{text}}} {shown} {self.now_s - ago:.3f}")
            ago -= SCRAPE_S

    def text(self) -> str:
        out = []
        for family, (kind, lines) in self.families.items():
            out.append(f"# TYPE {family} {kind}")
            out += lines
        return "\n".join(out) + "\n# EOF\n"


def _node(
    w: _Writer,
    node: str,
    *,
    slab: Callable[[float], float],
    pods: dict[str, Callable[[float], float]],
) -> None:
    inst = {"instance": f"{node}:9100", "job": "node-exporter"}
    total = 251 * GI
    used = lambda ago: slab(ago) + sum(p(ago) for p in pods.values()) + 20 * GI  # noqa: E731
    w.series("node_memory_MemTotal_bytes", inst, lambda ago: total)
    w.series("node_memory_MemAvailable_bytes", inst, lambda ago: total - used(ago), noise=50 * MI)
    w.series("node_memory_SUnreclaim_bytes", inst, slab, noise=20 * MI)
    w.series("node_memory_Cached_bytes", inst, lambda ago: 12 * GI, noise=40 * MI)
    w.series(
        "node_pressure_memory_stalled_seconds_total",
        inst,
        lambda ago: (SPAN_S - ago) * 0.01,
        kind="counter",
    )
    w.series("node_vmstat_oom_kill", inst, lambda ago: 0.0, kind="unknown", integer=True)
    for who, fn in pods.items():
        ns, pod = who.split("/")
        base = {"namespace": ns, "pod": pod, "node": node, "job": "kubelet"}
        w.series(
            "container_memory_working_set_bytes", {**base, "container": "main"}, fn, noise=30 * MI
        )
        # the pod-level cgroup and the pause container: must not be double counted
        w.series("container_memory_working_set_bytes", {**base, "container": ""}, fn, noise=30 * MI)
        w.series("container_memory_working_set_bytes", {**base, "container": "POD"}, lambda ago: MI)
        w.series(
            "kube_pod_info",
            {"namespace": ns, "pod": pod, "node": node, "job": "ksm"},
            lambda ago: 1,
            integer=True,
        )


def openmetrics(now_s: float, *, seed: int = 7) -> str:
    """All four shapes in one exposition (one TSDB, one Prometheus for the whole module)."""
    w = _Writer(now_s, seed)
    flat = lambda v: lambda ago: v  # noqa: E731
    leak = PLANTED["slab_leak"]
    slab = _ramp(leak.since_ago_s or 0, leak.rate_gib_per_h)
    _node(
        w,
        leak.node,
        slab=lambda ago: 6 * GI + slab(ago),
        pods={"ml-train/train-llm-0": flat(50 * GI)},
    )
    creep = PLANTED["dataloader_creep"]
    _node(
        w,
        creep.node,
        slab=flat(2 * GI),
        pods={
            "ml-train/loader-0": lambda ago: 10 * GI + (SPAN_S - ago) * 0.5 * GI / H,
            "ml-train/train-0": flat(40 * GI),
        },
    )
    spike = PLANTED["sudden_spike"]
    since = spike.since_ago_s or 0
    _node(
        w,
        spike.node,
        slab=flat(2 * GI),
        pods={"data-prep/spike-0": lambda ago: 45 * GI if ago < since else 5 * GI},
    )
    _node(
        w, PLANTED["flat_healthy"].node, slab=flat(2 * GI), pods={"ml-train/train-0": flat(60 * GI)}
    )
    # DCGM and kube-state-metrics restarts on the slab-leak node only (the others: gaps)
    for gpu in range(2):
        labels = {"gpu": str(gpu), "UUID": f"GPU-{gpu}", "Hostname": leak.node, "job": "dcgm"}
        w.series("DCGM_FI_DEV_FB_USED", labels, lambda ago: 65536.0, integer=True)
        xid = (lambda ago: 79.0 if ago < 2 * H else 0.0) if gpu == 1 else (lambda ago: 0.0)
        w.series("DCGM_FI_DEV_XID_ERRORS", labels, xid, integer=True)
    # dcgm-exporter with its Kubernetes mapping on mig-node-01 (the gpu-mig-mixed scenario's
    # node), scraped by a Prometheus without honorLabels: the exporter's pod/namespace/
    # container become exported_*, and pod/namespace are the scrape target's (the exporter)
    for pod, gi, used in DCGM_PODS:
        labels = {
            "gpu": "0",
            "UUID": "GPU-mig-0",
            "device": "nvidia0",
            "Hostname": "mig-node-01",
            "GPU_I_PROFILE": "1g.10gb",
            "GPU_I_ID": gi,
            "job": "nvidia-dcgm-exporter",
            "exported_pod": pod,
            "exported_namespace": "serving",
            "exported_container": "server",
            "pod": "nvidia-dcgm-exporter-7xk2p",
            "namespace": "gpu-operator",
        }
        w.series("DCGM_FI_DEV_FB_USED", labels, _constant(used), integer=True)
        w.series("DCGM_FI_DEV_FB_FREE", labels, _constant(10240 - used), integer=True)
    restarts = {"namespace": "ml-train", "pod": "train-llm-0", "container": "trainer", "job": "ksm"}
    restarted = lambda ago: 1.0 if ago < 0.5 * H else 0.0  # noqa: E731
    w.series(
        "kube_pod_container_status_restarts_total",
        restarts,
        restarted,
        kind="counter",
        integer=True,
    )
    w.series(
        "kube_pod_container_status_last_terminated_reason",
        {**restarts, "reason": "OOMKilled"},
        lambda ago: 1.0 if ago < 0.5 * H else 0.0,
        integer=True,
    )
    return w.text()
