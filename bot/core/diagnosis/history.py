"""The node's memory over time: series per consumer, markers, and the leading consumer's growth.

A ``History`` is what a chart draws and what gives the verdict its time dimension:
- ``series``: one per consumer of host memory (each pod's working set, kernel unreclaimable
  slab, page cache) plus node context (MemTotal and MemAvailable, so "other" = total -
  available - consumers; PSI stall rate; OOM kill counter), GPU
  memory per device, and container restarts; samples at ``step_s`` from ``start`` to ``end``
  (``timestamps_s`` are Unix seconds, ``values`` in the series' ``unit``);
- ``markers``: moments to mark (OOM kills and XIDs from the kernel log, evictions from the
  node's events, OOMKilled restarts from kube-state-metrics, gpunode's own actions);
- ``growth``: when the verdict's leading consumer started to grow, how fast, and when the node
  runs out at that rate (``bot.core.diagnosis.changepoint``).
Without Prometheus a History still carries the markers (``source`` ``snapshot``).

Built by ``bot.prom.history`` (Prometheus) and ``markers_from``/``apply_history`` here
(pure: time is in the data, never read from a clock).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from bot.core.diagnosis.changepoint import find_change
from bot.core.model.cluster import ClusterView
from bot.core.model.evidence import EvidenceBundle, Gap

SeriesKind = Literal[
    "mem_total",
    "mem_available",
    "kernel_slab_unreclaimable",
    "page_cache",
    "pod_working_set",
    "psi_full_rate",
    "oom_kills",
    "gpu_memory_used",
    "gpu_xid",
    "restarts",
]
MarkerKind = Literal["oom_kill", "eviction", "xid", "restart", "action"]
#: consumer series kinds: parts of the host memory stack a chart stacks
CONSUMER_KINDS = frozenset({"kernel_slab_unreclaimable", "page_cache", "pod_working_set"})
GIB = 1024**3
MIN_GROWTH_BYTES_PER_S = 64 * 1024**2 / 3600  # below 64 MiB/h a consumer counts as flat


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Series(_Model):
    key: str = Field(description="'node:mem_available', 'pod:ns/name', 'gpu:3', ...")
    kind: SeriesKind
    label: str = Field(description="what a legend shows: 'ml/train-0', 'kernel slab'")
    unit: Literal["bytes", "ratio", "count"] = "bytes"
    source: str = Field(description="e.g. 'prometheus:node_memory_SUnreclaim_bytes'")
    timestamps_s: list[float] = Field(default_factory=list)
    values: list[float] = Field(default_factory=list)

    @property
    def consumer(self) -> bool:
        return self.kind in CONSUMER_KINDS


class Marker(_Model):
    at: datetime
    kind: MarkerKind
    subject: str = Field(description="pod, GPU or node the moment is about")
    label: str = Field(
        description="the moment in English for logs and tools: 'cgroup OOM kill python', "
        "'XID 79'; presenters word ``kind`` and ``params`` instead (``bot.render.markers``)"
    )
    source: str
    params: dict[str, Any] = Field(
        default_factory=dict,
        description="what the presenter words, by kind: oom_kill {scope: global|cgroup, "
        "process} from the kernel log or {counter} from Prometheus; xid {code}; eviction "
        "{reason}; restart {reason: OOMKilled} or {}; action {code, params} (the timeline "
        "entry's, ``TimelineEntry.said``) or {} for an entry that names none",
    )

    @model_validator(mode="before")
    @classmethod
    def _legacy_params(cls, data: Any) -> Any:
        """A marker stored before markers carried params (a snapshot written by an older
        version): its params from the label the core wrote then, so it is still worded; a
        label the core never wrote keeps no params (a presenter shows it as stored)."""
        if not isinstance(data, dict) or "params" in data:
            return data
        return {**data, "params": legacy_params(str(data.get("kind")), str(data.get("label")))}


def legacy_params(kind: str, label: str) -> dict[str, Any]:
    """The params of a marker stored with only its label (see ``Marker.params``)."""
    if kind == "oom_kill":
        scope, _, process = label.partition(" OOM kill ")
        if scope in ("global", "cgroup") and process:
            return {"scope": scope, "process": process}
        if label == "OOM kill (node_vmstat_oom_kill)":
            return {"counter": "node_vmstat_oom_kill"}
    if kind == "xid" and label.startswith("XID ") and label[4:].isdigit():
        return {"code": int(label[4:])}
    if kind == "eviction" and label == "evicted":
        return {"reason": "Evicted"}
    if kind == "restart" and label in ("restart", "restart (OOMKilled)"):
        return {"reason": "OOMKilled"} if label.endswith("(OOMKilled)") else {}
    return {}


class Growth(_Model):
    """The leading consumer's last regime (``changepoint.Change``) in people's units."""

    series_key: str
    label: str
    kind: Literal["growth", "step", "flat", "decline"]
    since: datetime
    before_window: bool = Field(description="True: one regime over the window, began earlier")
    rate_bytes_per_h: float
    jump_bytes: float = 0.0
    current_bytes: float
    available_bytes: float | None = Field(None, description="node MemAvailable at the end")
    exhaustion_s: float | None = Field(None, description="available / rate; None if not growing")


class History(_Model):
    node: str
    source: Literal["prometheus", "snapshot"]
    start: datetime
    end: datetime
    step_s: float
    series: list[Series] = Field(default_factory=list)
    markers: list[Marker] = Field(default_factory=list)
    growth: Growth | None = None
    gaps: list[Gap] = Field(default_factory=list)

    def get(self, key: str) -> Series | None:
        return next((s for s in self.series if s.key == key), None)


def _utc(moment: datetime) -> datetime:
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


def markers_from(bundle: EvidenceBundle | None, view: ClusterView | None) -> list[Marker]:
    """OOM kills and XIDs (kernel log) and evictions (events), oldest first."""
    out: list[Marker] = []
    log = bundle.kernel_log if bundle is not None else None
    uid_to_key = {p.uid.lower(): p.key for p in view.pods} if view is not None else {}
    for kill in log.oom_kills if log is not None else []:
        if kill.at is None:
            continue
        who = uid_to_key.get((kill.pod_uid or "").lower()) or (kill.pod_uid or "node")
        scope = "global" if kill.scope == "node" else "cgroup"
        out.append(
            Marker(
                at=_utc(kill.at),
                kind="oom_kill",
                subject=who,
                label=f"{scope} OOM kill {kill.comm}",
                source="kmsg:/dev/kmsg",
                params={"scope": scope, "process": kill.comm},
            )
        )
    for x in log.xids if log is not None else []:
        if x.at is None:
            continue
        gpu = f"GPU {x.gpu_index}" if x.gpu_index is not None else f"PCI {x.pci_bus_id}"
        out.append(
            Marker(
                at=_utc(x.at),
                kind="xid",
                subject=gpu,
                label=f"XID {x.code}",
                source="kmsg:/dev/kmsg",
                params={"code": x.code},
            )
        )
    for e in view.events if view is not None else []:
        if e.reason == "Evicted" and e.last_seen is not None:
            out.append(
                Marker(
                    at=_utc(e.last_seen),
                    kind="eviction",
                    subject=f"{e.namespace}/{e.involved_name}",
                    label="evicted",
                    source="k8s:events",
                    params={"reason": e.reason},
                )
            )
    return sorted(out, key=lambda m: (m.at, m.kind, m.subject))


def leading_series_key(cause: str, subject: str | None, params: dict[str, object]) -> str | None:
    """The series of the consumer the verdict blames, when it has one."""
    if cause == "kernel_slab":
        return "node:slab_unreclaimable"
    if cause in ("host_memory_workload", "container_limit") and subject:
        return f"pod:{subject}"
    if cause == "gpu_memory" and isinstance(params.get("gpu_index"), int):
        return f"gpu:{params['gpu_index']}"
    return None


def growth_of(history: History, key: str | None) -> Growth | None:
    """The growth of series ``key`` when it grows (or jumped); else of the fastest-growing
    pod or kernel slab; None when nothing grows."""
    own = next((_growth(history, s) for s in history.series if s.key == key), None)
    if own is not None and own.kind in ("growth", "step"):
        return own
    # page cache grows on any healthy node and is reclaimable: never the leading consumer
    leads = [s for s in history.series if s.consumer and s.kind != "page_cache"]
    grown = [g for s in leads if (g := _growth(history, s))]
    growing = [g for g in grown if g.kind in ("growth", "step")]
    return max(growing, key=lambda g: (g.rate_bytes_per_h, g.jump_bytes), default=None)


def _growth(history: History, series: Series) -> Growth | None:
    change = find_change(series.timestamps_s, series.values, min_rate=MIN_GROWTH_BYTES_PER_S)
    if change is None:
        return None
    available = history.get("node:mem_available")
    avail = available.values[-1] if available is not None and available.values else None
    rate_h = change.rate_after * 3600
    exhaustion = (
        avail / change.rate_after if avail is not None and change.kind == "growth" else None
    )
    return Growth(
        series_key=series.key,
        label=series.label,
        kind=change.kind,
        since=datetime.fromtimestamp(change.at_s, UTC),
        before_window=not change.breakpoint,
        rate_bytes_per_h=rate_h,
        jump_bytes=change.jump,
        current_bytes=series.values[-1],
        available_bytes=avail,
        exhaustion_s=max(exhaustion, 0.0) if exhaustion is not None else None,
    )
