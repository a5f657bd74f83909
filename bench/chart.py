"""Chart rendering time: a 6 h window at 15 s resolution with 20 series, against pyplot.

gpunode's renderer (``bot.charts.render_png``: object API, Agg canvas, constrained layout)
draws a ``ChartSpec`` with 14 host bands (stacked) and 6 GPU lines (1441 samples each) plus
markers. The baseline draws the same data the way most scripts do: ``matplotlib.pyplot`` with
its default settings (``plt.subplots``, ``stackplot``, ``plot``, ``savefig``), same size and
dpi. Rounds alternate the two (so drift hits both alike); the medians are compared. The last
line is the result as JSON; target: gpunode's median under 300 ms.
"""

from __future__ import annotations

import argparse
import io
import json
import math
import statistics
import time

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

from bot.charts import render_png
from bot.core.diagnosis.history import MarkerKind
from bot.core.reporting.charts import (
    GPU_COLOURS,
    MARKER_STYLE,
    OKABE_ITO,
    ChartMarker,
    ChartSeries,
    ChartSpec,
)

T0 = 1_796_083_200.0
STEP_S = 15.0
WINDOW_S = 6 * 3600
HOST_SERIES, GPU_SERIES = 14, 6


def spec() -> ChartSpec:
    n = int(WINDOW_S / STEP_S) + 1
    ts = [T0 + i * STEP_S for i in range(n)]

    def wave(k: int) -> list[float]:
        return [2.0 + k * 0.3 + math.sin(i / (40 + k)) for i in range(n)]

    host = [
        ChartSeries(
            key=f"pod:ns/p{k}",
            label=f"ns/p{k}",
            colour=OKABE_ITO[k % 7],
            timestamps_s=ts,
            values_gib=wave(k),
        )
        for k in range(HOST_SERIES)
    ]
    gpu = [
        ChartSeries(
            key=f"gpu:{k}",
            label=f"GPU {k}",
            colour=GPU_COLOURS[k % 7],
            timestamps_s=ts,
            values_gib=[20 + 5 * k + v for v in wave(k)],
        )
        for k in range(GPU_SERIES)
    ]
    kinds: tuple[tuple[float, MarkerKind], ...] = (
        (1, "xid"),
        (3, "eviction"),
        (5, "oom_kill"),
        (5.5, "action"),
    )
    markers = [
        ChartMarker(
            at_s=T0 + h * 3600,
            kind=kind,
            subject="n1",
            label=kind,
            colour=MARKER_STYLE[kind][0],
            linestyle=MARKER_STYLE[kind][1],
        )
        for h, kind in kinds
    ]
    return ChartSpec(
        title="bench: memory",
        node="n1",
        source="prometheus",
        start_s=T0,
        end_s=T0 + WINDOW_S,
        host=host,
        host_total_gib=256,
        gpu=gpu,
        gpu_total_gib=80,
        markers=markers,
    )


def pyplot_default(s: ChartSpec) -> bytes:
    """The baseline: pyplot with default settings, same data, size and dpi."""
    fig, (host, gpu) = plt.subplots(2, 1, figsize=(10, 6), dpi=100, sharex=True)
    host.stackplot(
        s.host[0].timestamps_s, *[x.values_gib for x in s.host], labels=[x.label for x in s.host]
    )
    for g in s.gpu:
        gpu.plot(g.timestamps_s, g.values_gib, label=g.label)
    for m in s.markers:
        host.axvline(m.at_s)
        gpu.axvline(m.at_s)
    host.legend()
    gpu.legend()
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    plt.close(fig)
    return buf.getvalue()


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--rounds", type=int, default=15)
    rounds = parser.parse_args().rounds
    s = spec()
    render_png(s, locale="en"), pyplot_default(s)  # warm caches (fonts, imports) for both
    ours: list[float] = []
    base: list[float] = []
    for i in range(rounds):
        for name in ("ours", "base") if i % 2 == 0 else ("base", "ours"):
            t = time.perf_counter()
            render_png(s, locale="en") if name == "ours" else pyplot_default(s)
            (ours if name == "ours" else base).append((time.perf_counter() - t) * 1000)
    value, baseline = statistics.median(ours), statistics.median(base)
    print(
        json.dumps(
            {
                "bench": "chart",
                "metric": "render_ms_median",
                "value": round(value, 1),
                "baseline": round(baseline, 1),
                "ratio": round(value / baseline, 3),
                "target": 300,
                "series": HOST_SERIES + GPU_SERIES,
                "samples_per_series": len(s.host[0].timestamps_s),
                "rounds": rounds,
                "baseline_name": "pyplot defaults (plt.subplots + stackplot + savefig)",
            }
        )
    )


if __name__ == "__main__":
    main()
