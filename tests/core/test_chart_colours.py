"""A workload keeps its name and colour in every chart of an incident; a before/after chart
ranks workloads over both snapshots; identical GPUs are one line (pure: chart specs only)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from bot.core.diagnosis.findings import Diagnosis, Ledger, LedgerEntry
from bot.core.model.workload_names import workload_of
from bot.core.reporting.analysis import analyze
from bot.core.reporting.charts import (
    WORKLOAD_COLOURS,
    ChartSeries,
    chart_spec,
    collapse_gpus,
    workload_colours,
)
from tests.core.analysis_builders import bundle, meminfo

GIB = 1024**3
T = datetime(2026, 12, 1, 6, 0, tzinfo=UTC)


def test_a_pod_is_named_by_its_workload() -> None:
    assert workload_of("data-prep/preprocess-rbrtfs528j-z74mt") == "data-prep/preprocess"
    assert (
        workload_of("gpu-operator/nvidia-dcgm-exporter-8wck8")
        == "gpu-operator/nvidia-dcgm-exporter"
    )
    assert workload_of("ml-train/train-llm-0") == "ml-train/train-llm-0"  # a StatefulSet's
    assert workload_of("research/jupyter-alice") == "research/jupyter-alice"  # not a hash


def test_a_workloads_colour_does_not_depend_on_the_others() -> None:
    alone = workload_colours(["data-prep/preprocess"])
    crowd = workload_colours(["ml/a", "data-prep/preprocess", "ml/b", "research/c"])
    assert alone["data-prep/preprocess"] == crowd["data-prep/preprocess"]
    many = workload_colours([f"ns/w{i}" for i in range(12)])
    assert len(set(many.values())) == 12 and set(many.values()) <= set(WORKLOAD_COLOURS)


def _snap(at: datetime, pods: dict[str, float]) -> Diagnosis:
    d = analyze(bundle(meminfo=meminfo(256)), None, now=at)
    entries = [
        LedgerEntry(category="pod", label=p, bytes=int(g * GIB), source="test", pod_key=p)
        for p, g in pods.items()
    ]
    ledger = Ledger(total_bytes=256 * GIB, entries=entries)
    return d.model_copy(update={"ledger": ledger, "collected_at": at, "history": None})


def test_the_before_after_legend_is_the_union_and_names_the_capped_offender() -> None:
    small = {f"ml/w{i}": 10.0 + i for i in range(5)}
    before = _snap(T, {"data-prep/preprocess-rbrtfs528j-z74mt": 61.5, **small})
    # tier 3 restarted the offender elsewhere: the after snapshot does not hold it at all
    after = _snap(T + timedelta(minutes=5), small)
    spec = chart_spec(after, earlier=[(before, None)])
    band = next(s for s in spec.host if s.label == "data-prep/preprocess")
    assert band.values_gib == [61.5, 0.0]
    # the same colour as in the chart of the first diagnosis alone
    first = chart_spec(before)
    assert band.colour == next(s.colour for s in first.host if s.label == band.label)
    # and the replaced pod of the same Deployment is the same band
    replaced = _snap(T + timedelta(minutes=9), {"data-prep/preprocess-bcdfg2456-x7k9q": 30.0})
    again = chart_spec(replaced, earlier=[(before, None)])
    band2 = next(s for s in again.host if s.label == "data-prep/preprocess")
    assert band2.values_gib == [61.5, 30.0] and band2.colour == band.colour


def _gpu(i: int, gib: float) -> ChartSeries:
    return ChartSeries(
        key=f"gpu:{i}",
        label=f"GPU {i}",
        colour="#000000",
        timestamps_s=[1.0, 2.0],
        values_gib=[gib, gib],
    )


def test_identical_gpus_collapse_to_one_labelled_line() -> None:
    eight = collapse_gpus([_gpu(i, 64.0) for i in range(8)])
    assert [s.label for s in eight] == ["GPU 0–7 (each)"]
    mixed = collapse_gpus([_gpu(0, 64.0), _gpu(1, 10.0), _gpu(2, 64.0), _gpu(3, 10.0)])
    assert [s.label for s in mixed] == ["GPU 0, 2 (each)", "GPU 1, 3 (each)"]
    assert [s.label for s in collapse_gpus([_gpu(0, 64.0), _gpu(1, 10.0)])] == ["GPU 0", "GPU 1"]
