"""What a diagnosis chart shows, as data (pure: no I/O, no plotting library).

``chart_spec(diagnosis, bundle, actions=...)`` turns a diagnosis (with its ``History``) into a
``ChartSpec`` that ``bot.charts`` draws and tests can read before anything is rendered:
- ``host``: host memory over the window, stacked by consumer: the top pods (by their last
  working set), kernel unreclaimable slab, page cache, and ``other`` (used memory the parts
  do not explain: the rest of the pods, other kernel memory, processes outside pods);
- ``gpu``: GPU memory used per device (one line each);
- ``markers``: OOM kills, evictions, XIDs, restarts and gpunode's own actions.
With Prometheus the series come from the history; without it (``history.source ==
"snapshot"``) the stack is one sample at the collection time drawn from the memory ledger and
the GPUs from the bundle, and the markers from the kernel log and the node's events.

Every chart of an incident gives a workload the same colour (``workload_colours``: a slot
chosen from the workload's name, not its rank, so a pod that drops out of the top does not
repaint the others), and names pods by their workload (``ns/preprocess`` for every pod of the
Deployment), so a replaced pod is the same band before and after an action. A before/after
chart ranks the workloads over both snapshots, so the capped offender keeps its name after it
shrank. GPUs that report the same memory are one line, labelled with their range.

Colours come from the Okabe–Ito palette (distinguishable with the common colour-vision
deficiencies); markers also differ by line style, so colour is never the only cue.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from bot.core.diagnosis.findings import Diagnosis
from bot.core.diagnosis.history import History, Marker, MarkerKind
from bot.core.model.evidence import EvidenceBundle
from bot.core.model.incidents import TimelineEntry
from bot.core.model.workload_names import workload_of

GIB = 1024**3
#: Okabe & Ito (2008), "Color Universal Design"; black last
OKABE_ITO = ("#E69F00", "#56B4E9", "#009E73", "#F0E442", "#0072B2", "#D55E00", "#CC79A7")
KERNEL_COLOUR = "#D55E00"  # vermillion
CACHE_COLOUR = "#56B4E9"  # sky blue
OTHER_COLOUR = "#999999"  # neutral grey: "everything else" should not draw the eye
POD_COLOURS = ("#E69F00", "#009E73", "#0072B2", "#CC79A7", "#F0E442")
GPU_COLOURS = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#D55E00", "#56B4E9", "#F0E442")
MARKER_STYLE: dict[MarkerKind, tuple[str, str]] = {
    "oom_kill": ("#000000", "solid"),
    "eviction": ("#CC79A7", "dashed"),
    "xid": ("#D55E00", "dotted"),
    "restart": ("#E69F00", "dashdot"),
    "action": ("#009E73", "solid"),
}
TOP_PODS = 5  # more bands than this stop being readable in a thread-sized image
#: workload colours: Okabe–Ito's five that kernel, cache and other leave free, then Paul
#: Tol's muted scheme (also colour-blind safe) so a hash rarely has to probe
WORKLOAD_COLOURS = (
    *POD_COLOURS,
    "#332288",
    "#88CCEE",
    "#44AA99",
    "#117733",
    "#999933",
    "#AA4499",
    "#882255",
)
#: GPU readings closer than this (GiB) are "the same" and share one line
SAME_GIB = 0.01


def _slot(key: str) -> int:
    return int.from_bytes(hashlib.sha256(key.encode()).digest()[:4], "big")


def workload_colours(keys: Iterable[str]) -> dict[str, str]:
    """A colour per workload key, the same in every chart: each takes the palette slot its
    name hashes to; on a clash (rare: 12 slots, at most 5 workloads) the later key in sorted
    order takes the next free slot."""
    taken: dict[int, str] = {}
    out: dict[str, str] = {}
    n = len(WORKLOAD_COLOURS)
    for key in sorted(set(keys)):
        slot = _slot(key) % n
        for step in range(n):
            if (slot + step) % n not in taken:
                slot = (slot + step) % n
                break
        taken[slot] = key
        out[key] = WORKLOAD_COLOURS[slot]
    return out


def collapse_gpus(series: Sequence[ChartSeries]) -> list[ChartSeries]:
    """GPUs whose readings match (within ``SAME_GIB`` at every sample) become one series
    labelled with their range, e.g. ``GPU 0–7 (each)``; the others stay one line each."""
    groups: list[list[ChartSeries]] = []
    for s in series:
        for g in groups:
            ref = g[0]
            if ref.timestamps_s == s.timestamps_s and all(
                abs(a - b) <= SAME_GIB for a, b in zip(ref.values_gib, s.values_gib, strict=True)
            ):
                g.append(s)
                break
        else:
            groups.append([s])
    out: list[ChartSeries] = []
    for g in groups:
        if len(g) == 1:
            out.append(g[0])
            continue
        indices = [int(x.key.split(":")[-1]) for x in g if x.key.split(":")[-1].isdigit()]
        contiguous = (
            indices == list(range(indices[0], indices[0] + len(indices))) if indices else False
        )
        names = f"{indices[0]}–{indices[-1]}" if contiguous else ", ".join(str(i) for i in indices)
        out.append(g[0].model_copy(update={"key": "gpu:" + names, "label": f"GPU {names} (each)"}))
    return out


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class ChartSeries(_Model):
    key: str = Field(description="history series key, or 'node:other' / 'node:total'")
    label: str
    colour: str
    timestamps_s: list[float]
    values_gib: list[float]


class ChartMarker(_Model):
    at_s: float
    kind: MarkerKind
    subject: str
    label: str = Field(description="the marker in English (``Marker.label``)")
    params: dict[str, Any] = Field(
        default_factory=dict, description="what the presenter words (``Marker.params``)"
    )
    colour: str
    linestyle: str


class ChartSpec(_Model):
    """Everything the renderer needs; nothing it must compute."""

    title: str
    node: str
    source: Literal["prometheus", "snapshot"]
    start_s: float
    end_s: float
    host: list[ChartSeries] = Field(default_factory=list, description="stacked, bottom first")
    host_total_gib: float | None = Field(None, description="MemTotal: a line above the stack")
    gpu: list[ChartSeries] = Field(default_factory=list)
    gpu_total_gib: float | None = Field(None, description="largest device's memory")
    markers: list[ChartMarker] = Field(default_factory=list)

    def host_keys(self) -> list[str]:
        return [s.key for s in self.host]


def action_markers(entries: Iterable[TimelineEntry], *, node: str) -> list[Marker]:
    """One marker per action that ran (or was undone): ``action_result`` entries that carry
    an ``action_id``; refusals and cancellations changed nothing and are not marked."""
    return [
        Marker(
            at=e.at,
            kind="action",
            subject=node,
            label=e.text,
            source="gpunode:timeline",
            params=e.said or {},
        )
        for e in entries
        if e.kind == "action_result" and e.data.get("action_id")
    ]


def chart_spec(
    diagnosis: Diagnosis,
    bundle: EvidenceBundle | None = None,
    *,
    actions: Sequence[Marker] = (),
    earlier: Sequence[tuple[Diagnosis, EvidenceBundle | None]] = (),
    title: str | None = None,
) -> ChartSpec:
    """The chart of ``diagnosis`` (see the module docstring); ``actions`` adds action markers.

    ``earlier``: previous snapshots of the same incident (e.g. the one before an action); without
    Prometheus each is one more stacked bar, so a before/after chart shows both."""
    history = diagnosis.history
    at = diagnosis.collected_at.timestamp()
    total = diagnosis.ledger.total_bytes / GIB if diagnosis.ledger.total_bytes else None
    has_series = history is not None and any(s.consumer for s in history.series)
    snapshots = [*earlier, (diagnosis, bundle)]
    if history is not None and has_series:
        host = _host_from_history(history, total)
        gpu = _gpu_from_history(history)
    else:
        host = _host_from_ledgers([d for d, _ in snapshots])
        gpu = []
    if not gpu:
        gpu = _gpu_from_bundles(snapshots)
    gpu = collapse_gpus(gpu)
    devices = [g for _, b in snapshots if b is not None for g in b.gpus]
    gpu_total = max(g.memory_total_bytes for g in devices) / GIB if devices else None
    markers = [*(history.markers if history is not None else []), *actions]
    start = history.start.timestamp() if history is not None else at
    end = history.end.timestamp() if history is not None else at
    times = [m.at.timestamp() for m in markers] + [d.collected_at.timestamp() for d, _ in snapshots]
    return ChartSpec(
        title=title or f"{diagnosis.node}: memory",
        node=diagnosis.node,
        source="prometheus" if has_series else "snapshot",
        start_s=min([*times, start]),
        end_s=max([*times, end]),
        host=host,
        host_total_gib=total,
        gpu=gpu,
        gpu_total_gib=gpu_total,
        markers=[_marker(m) for m in sorted(markers, key=lambda m: (m.at, m.kind, m.subject))],
    )


def _gpu_from_bundles(
    snapshots: Sequence[tuple[Diagnosis, EvidenceBundle | None]],
) -> list[ChartSeries]:
    """One point per snapshot and device (NVML's used memory at collection time)."""
    points: dict[int, list[tuple[float, float]]] = {}
    for d, b in snapshots:
        for g in b.gpus if b is not None else []:
            points.setdefault(g.index, []).append(
                (d.collected_at.timestamp(), g.memory_used_bytes / GIB)
            )
    return [
        ChartSeries(
            key=f"gpu:{index}",
            label=f"GPU {index}",
            colour=GPU_COLOURS[i % len(GPU_COLOURS)],
            timestamps_s=[t for t, _ in pts],
            values_gib=[v for _, v in pts],
        )
        for i, (index, pts) in enumerate(sorted(points.items()))
    ]


def _marker(m: Marker) -> ChartMarker:
    colour, style = MARKER_STYLE[m.kind]
    return ChartMarker(
        at_s=m.at.timestamp(),
        kind=m.kind,
        subject=m.subject,
        label=m.label,
        params=dict(m.params),
        colour=colour,
        linestyle=style,
    )


def _grid(history: History) -> list[float]:
    return sorted({t for s in history.series if s.consumer for t in s.timestamps_s})


def _on_grid(grid: list[float], ts: list[float], vs: list[float]) -> list[float]:
    """Values on ``grid`` in GiB; a missing sample is 0 (the band thins, never lies upward)."""
    by_t = dict(zip(ts, vs, strict=False))
    return [by_t.get(t, 0.0) / GIB for t in grid]


def _host_from_history(history: History, total_gib: float | None) -> list[ChartSeries]:
    grid = _grid(history)
    pods = [s for s in history.series if s.kind == "pod_working_set"]
    pods.sort(key=lambda s: (-(s.values[-1] if s.values else 0.0), s.key))
    top = pods[:TOP_PODS]
    colours = workload_colours(workload_of(s.key.removeprefix("pod:")) for s in top)
    out = [
        ChartSeries(
            key=s.key,
            label=s.label,
            colour=colours[workload_of(s.key.removeprefix("pod:"))],
            timestamps_s=grid,
            values_gib=_on_grid(grid, s.timestamps_s, s.values),
        )
        for s in top
    ]
    for kind, colour in (
        ("kernel_slab_unreclaimable", KERNEL_COLOUR),
        ("page_cache", CACHE_COLOUR),
    ):
        s = next((x for x in history.series if x.kind == kind), None)
        if s is not None:
            out.append(
                ChartSeries(
                    key=s.key,
                    label=s.label,
                    colour=colour,
                    timestamps_s=grid,
                    values_gib=_on_grid(grid, s.timestamps_s, s.values),
                )
            )
    avail = history.get("node:mem_available")
    total_series = history.get("node:mem_total")
    totals = (
        _on_grid(grid, total_series.timestamps_s, total_series.values)
        if total_series is not None
        else [total_gib or 0.0] * len(grid)
    )
    if avail is not None and any(totals):
        free = _on_grid(grid, avail.timestamps_s, avail.values)
        stacked = [sum(col) for col in zip(*(s.values_gib for s in out), strict=False)] or [
            0.0
        ] * len(grid)
        # used = total - available; what the bands do not explain is "other" (never negative)
        other = [
            max(t - f - s, 0.0) if f and t else 0.0
            for t, f, s in zip(totals, free, stacked, strict=True)
        ]
        out.append(
            ChartSeries(
                key="node:other",
                label="other (rest of pods, kernel, processes)",
                colour=OTHER_COLOUR,
                timestamps_s=grid,
                values_gib=other,
            )
        )
    return out


def _gpu_from_history(history: History) -> list[ChartSeries]:
    gpus = [s for s in history.series if s.kind == "gpu_memory_used"]
    return [
        ChartSeries(
            key=s.key,
            label=s.label,
            colour=GPU_COLOURS[i % len(GPU_COLOURS)],
            timestamps_s=list(s.timestamps_s),
            values_gib=[v / GIB for v in s.values],
        )
        for i, s in enumerate(gpus)
    ]


def _ledger_parts(diagnosis: Diagnosis, top: Sequence[str]) -> dict[str, float]:
    """Bytes per chart key for one snapshot: the ``top`` workloads, kernel slab, cache, other."""
    entries = diagnosis.ledger.entries
    parts = dict.fromkeys([*top, "node:slab_unreclaimable", "node:page_cache", "node:other"], 0.0)
    for e in entries:
        key = f"workload:{workload_of(e.pod_key or e.label)}" if e.category == "pod" else ""
        if key in parts:
            parts[key] += e.bytes
        elif e.category == "kernel_slab_unreclaimable":
            parts["node:slab_unreclaimable"] += e.bytes
        elif e.category == "page_cache":
            parts["node:page_cache"] += e.bytes
        elif e.category != "free":
            parts["node:other"] += e.bytes
    return parts


def _workload_bytes(d: Diagnosis) -> dict[str, int]:
    out: dict[str, int] = {}
    for e in d.ledger.entries:
        if e.category == "pod":
            w = workload_of(e.pod_key or e.label)
            out[w] = out.get(w, 0) + e.bytes
    return out


def _host_from_ledgers(diagnoses: Sequence[Diagnosis]) -> list[ChartSeries]:
    """One stacked sample per snapshot from its ledger: the top workloads over all the
    snapshots (a before/after chart names the capped offender after it shrank), kernel
    slab, page cache, other (the rest of the pods, other kernel memory, processes)."""
    most: dict[str, int] = {}
    for d in diagnoses:
        for w, b in _workload_bytes(d).items():
            most[w] = max(most.get(w, 0), b)
    ranked = sorted(most, key=lambda w: (-most[w], w))[:TOP_PODS]
    top = [f"workload:{w}" for w in ranked]
    labels = {f"workload:{w}": w for w in ranked}
    labels |= {
        "node:slab_unreclaimable": "kernel slab (unreclaimable)",
        "node:page_cache": "page cache",
        "node:other": "other (rest of pods, kernel, processes)",
    }
    colours = {f"workload:{w}": c for w, c in workload_colours(ranked).items()} | {
        "node:slab_unreclaimable": KERNEL_COLOUR,
        "node:page_cache": CACHE_COLOUR,
        "node:other": OTHER_COLOUR,
    }
    parts = [_ledger_parts(d, top) for d in diagnoses]
    times = [d.collected_at.timestamp() for d in diagnoses]
    return [
        ChartSeries(
            key=key,
            label=labels[key],
            colour=colours[key],
            timestamps_s=times,
            values_gib=[p[key] / GIB for p in parts],
        )
        for key in parts[-1]
    ]
