"""The chart spec: which bands are stacked, which lines and markers are drawn (before pixels)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from bot.core.diagnosis.findings import Diagnosis
from bot.core.diagnosis.history import GIB, History, Series
from bot.core.diagnosis.rules.growth import attach
from bot.core.model.incidents import TimelineEntry
from bot.core.model.kernel_records import KernelLog, OomKill, XidEvent
from bot.core.reporting.analysis import analyze
from bot.core.reporting.charts import (
    OTHER_COLOUR,
    TOP_PODS,
    WORKLOAD_COLOURS,
    action_markers,
    chart_spec,
)
from tests.core.analysis_builders import bundle, gpu, meminfo

END = datetime(2026, 12, 1, 6, 0, tzinfo=UTC)
START = END - timedelta(hours=6)
STEP = 60


def _series(key: str, kind: str, gib: float, label: str = "", *, every: int = 1) -> Series:
    ts = [START.timestamp() + i * STEP for i in range(0, 361, every)]
    return Series.model_validate(
        {
            "key": key,
            "kind": kind,
            "label": label or key,
            "source": "prometheus:x",
            "timestamps_s": ts,
            "values": [gib * GIB for _ in ts],
        }
    )


def _diagnosis(*series: Series, total_gib: float = 256, avail_gib: float = 40) -> Diagnosis:
    d = analyze(bundle(meminfo=meminfo(total_gib), gpus=[gpu(0, 30), gpu(1, 70)]), None, now=END)
    avail = _series("node:mem_available", "mem_available", avail_gib)
    history = History(
        node="n1",
        source="prometheus",
        start=START,
        end=END,
        step_s=STEP,
        series=[avail, *series],
    )
    return attach(d, history, bundle=None, view=None, now=END)


def test_the_stack_is_the_top_pods_then_kernel_slab_page_cache_and_other() -> None:
    pods = [_series(f"pod:ml/p{i}", "pod_working_set", float(i + 1), f"ml/p{i}") for i in range(8)]
    slab = _series("node:slab_unreclaimable", "kernel_slab_unreclaimable", 20)
    cache = _series("node:page_cache", "page_cache", 30)
    spec = chart_spec(_diagnosis(*pods, slab, cache))
    top = [f"pod:ml/p{i}" for i in range(7, 7 - TOP_PODS, -1)]
    assert spec.host_keys() == [*top, "node:slab_unreclaimable", "node:page_cache", "node:other"]
    assert spec.source == "prometheus"
    other = spec.host[-1]
    # used (256 - 40) minus the drawn bands (8+7+6+5+4 pods, 20 slab, 30 cache)
    assert other.values_gib[0] == pytest.approx(216 - 30 - 50)
    assert other.colour == OTHER_COLOUR
    assert all(len(s.values_gib) == 361 for s in spec.host)
    assert spec.host_total_gib == pytest.approx(256)


def test_a_series_with_missing_samples_is_drawn_on_the_common_grid_with_zeros() -> None:
    slab = _series("node:slab_unreclaimable", "kernel_slab_unreclaimable", 20)
    sparse = _series("pod:ml/a", "pod_working_set", 10, every=2)
    spec = chart_spec(_diagnosis(sparse, slab))
    band = next(s for s in spec.host if s.key == "pod:ml/a")
    assert band.timestamps_s == spec.host[-1].timestamps_s
    assert band.values_gib[:3] == [10, 0, 10]


def test_gpu_lines_come_from_the_history_one_per_device() -> None:
    slab = _series("node:slab_unreclaimable", "kernel_slab_unreclaimable", 20)
    g = [_series(f"gpu:{i}", "gpu_memory_used", 10.0 * (i + 1), f"GPU {i}") for i in range(3)]
    spec = chart_spec(_diagnosis(slab, *g))
    assert [s.key for s in spec.gpu] == ["gpu:0", "gpu:1", "gpu:2"]
    assert spec.gpu[2].values_gib[-1] == pytest.approx(30)


def test_colours_are_the_okabe_ito_palette_and_markers_differ_by_line_style() -> None:
    pods = [_series(f"pod:ml/p{i}", "pod_working_set", 1.0) for i in range(3)]
    at = END - timedelta(minutes=30)
    log = KernelLog(
        window_s=86400,
        oom_kills=[OomKill(at=at, uptime_us=1, scope="node", pid=7, comm="python")],
        xids=[XidEvent(at=at, uptime_us=2, code=79, gpu_index=1)],
    )
    b = bundle(meminfo=meminfo(256), kernel_log=log)
    d = attach(_diagnosis(*pods), None, bundle=b, view=None, now=END)
    spec = chart_spec(d, b)
    # pods: colour-blind-safe palettes only (Okabe–Ito, then Tol muted: WORKLOAD_COLOURS)
    assert {s.colour for s in spec.host if s.key.startswith("pod:")} <= set(WORKLOAD_COLOURS)
    styles = {m.kind: m.linestyle for m in spec.markers}
    assert styles["oom_kill"] != styles["xid"]


def test_without_prometheus_the_chart_draws_the_snapshot_and_the_kernel_records() -> None:
    at = END - timedelta(minutes=20)
    log = KernelLog(
        window_s=86400,
        oom_kills=[OomKill(at=at, uptime_us=1, scope="node", pid=7, comm="python")],
        xids=[XidEvent(at=at - timedelta(minutes=5), uptime_us=1, code=79, gpu_index=1)],
    )
    b = bundle(
        meminfo=meminfo(251, slab=150, s_unreclaim=140, s_reclaimable=10),
        gpus=[gpu(0, 30), gpu(1, 70)],
        kernel_log=log,
    ).model_copy(update={"collected_at": END})
    d = attach(analyze(b, None, now=END), None, bundle=b, view=None, now=END)
    spec = chart_spec(d, b)
    assert spec.source == "snapshot"
    assert spec.host_keys()[-3:] == ["node:slab_unreclaimable", "node:page_cache", "node:other"]
    slab = next(s for s in spec.host if s.key == "node:slab_unreclaimable")
    assert slab.timestamps_s == [END.timestamp()] and slab.values_gib[0] == pytest.approx(140)
    assert [(s.key, s.values_gib) for s in spec.gpu] == [("gpu:0", [30.0]), ("gpu:1", [70.0])]
    assert [(m.kind, m.label) for m in spec.markers] == [
        ("xid", "XID 79"),
        ("oom_kill", "global OOM kill python"),
    ]
    assert spec.start_s == (at - timedelta(minutes=5)).timestamp() and spec.end_s == END.timestamp()


def _entry(kind: str, text: str, minutes: int, **data: str) -> TimelineEntry:
    return TimelineEntry(
        incident_id="INC-0001",
        at=END - timedelta(minutes=minutes),
        kind=kind,  # type: ignore[arg-type]
        actor="U0ALICE",
        text=text,
        data=data,
    )


def test_actions_that_ran_are_marked_and_refusals_are_not() -> None:
    entries = [
        _entry("action_requested", "tier 3 requested: caps", 30),
        _entry("action_result", "tier 3 succeeded", 25, action_id="A1"),
        _entry("action_result", "refused as stale: evidence too old", 20),
        _entry(
            "action_result", "tier 1 failed after changing part of the cluster", 10, action_id="A2"
        ),
    ]
    marks = action_markers(entries, node="n1")
    assert [(m.kind, m.label) for m in marks] == [
        ("action", "tier 3 succeeded"),
        ("action", "tier 1 failed after changing part of the cluster"),
    ]
    d = _diagnosis(_series("node:slab_unreclaimable", "kernel_slab_unreclaimable", 20))
    spec = chart_spec(d, actions=marks)
    assert [m.kind for m in spec.markers] == ["action", "action"]


def test_a_before_after_chart_without_prometheus_has_one_bar_per_snapshot() -> None:
    def snap(at: datetime, slab: float, used: float) -> tuple[Diagnosis, object]:
        b = bundle(
            meminfo=meminfo(251, slab=slab + 10, s_unreclaim=slab, s_reclaimable=10),
            gpus=[gpu(0, used)],
        ).model_copy(update={"collected_at": at})
        return attach(analyze(b, None, now=at), None, bundle=b, view=None, now=at), b

    before, b0 = snap(END - timedelta(minutes=10), 140, 70)
    after, b1 = snap(END, 40, 20)
    act = action_markers(
        [_entry("action_result", "tier 2 succeeded", 5, action_id="A1")], node="n1"
    )
    spec = chart_spec(after, b1, actions=act, earlier=[(before, b0)])  # type: ignore[list-item,arg-type]
    slab = next(s for s in spec.host if s.key == "node:slab_unreclaimable")
    assert slab.timestamps_s == [(END - timedelta(minutes=10)).timestamp(), END.timestamp()]
    assert slab.values_gib == [pytest.approx(140), pytest.approx(40)]
    assert spec.gpu[0].values_gib == [70, 20]
    assert [m.label for m in spec.markers] == ["tier 2 succeeded"]
    assert all(len(s.values_gib) == 2 for s in spec.host)


def test_other_follows_the_nodes_own_memtotal_series_when_prometheus_has_it() -> None:
    slab = _series("node:slab_unreclaimable", "kernel_slab_unreclaimable", 20)
    total = _series("node:mem_total", "mem_total", 128)
    spec = chart_spec(_diagnosis(slab, total, total_gib=256, avail_gib=40))
    assert spec.host[-1].key == "node:other"
    assert spec.host[-1].values_gib[0] == pytest.approx(128 - 40 - 20)
