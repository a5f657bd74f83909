"""Draw a ``ChartSpec`` into a PNG (matplotlib's object API, Agg canvas, no pyplot).

The canvas is attached explicitly (``FigureCanvasAgg``), so no backend is selected globally and
no display is ever needed."""

from __future__ import annotations

import io
from datetime import UTC, datetime
from typing import Any

from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.dates import AutoDateLocator, DateFormatter, date2num
from matplotlib.figure import Figure

from bot.core.charts import ChartSeries, ChartSpec

WIDTH_IN, HEIGHT_IN, DPI = 10.0, 6.0, 100  # 1000x600 px: readable in a Slack thread preview
#: markers further apart than this share a label row; closer ones step down so labels don't overlap
LABEL_ROWS = 4
#: legends sit right of the plot, so they never hide a band or a marker's label
LEGEND: dict[str, Any] = {"loc": "upper left", "bbox_to_anchor": (1.01, 1.0), "fontsize": 7}
BAR_FRACTION = 0.04  # a snapshot bar's width as a share of the window
LATE = 0.7  # markers past 70 % of the window carry their label on the left


def _x(t: float) -> float:
    """Matplotlib's date axis unit (days since its epoch) for Unix seconds."""
    return float(date2num(datetime.fromtimestamp(t, UTC)))  # type: ignore[no-untyped-call]


def _short(label: str, limit: int = 36) -> str:
    """Legend text within ``limit`` characters (long pod names would squeeze the plot)."""
    return label if len(label) <= limit else label[: limit - 1] + "…"


def _dates(ts: list[float]) -> list[float]:
    return [_x(t) for t in ts]


def _draw_host(ax: Axes, spec: ChartSpec) -> None:
    bands = [s for s in spec.host if s.values_gib]
    if bands and spec.source == "prometheus":
        ax.stackplot(
            _dates(bands[0].timestamps_s),
            *[s.values_gib for s in bands],
            labels=[_short(s.label) for s in bands],
            colors=[s.colour for s in bands],
            linewidth=0,
        )
    elif bands:
        _snapshot_bars(ax, spec, bands)
    if spec.host_total_gib is not None:
        ax.axhline(spec.host_total_gib, color="#000000", linewidth=1, label="MemTotal")
    ax.set_ylabel("host memory (GiB)")
    ax.set_ylim(0, (spec.host_total_gib or ax.get_ylim()[1]) * 1.05)
    ax.legend(**LEGEND)


def _snapshot_bars(ax: Axes, spec: ChartSpec, bands: list[ChartSeries]) -> None:
    """One stacked bar per collection (no history to draw bands from)."""
    xs = _dates(bands[0].timestamps_s)
    span_days = max(spec.end_s - spec.start_s, 600.0) / 86400
    width = span_days * BAR_FRACTION
    bottoms = [0.0] * len(xs)
    for s in bands:
        ax.bar(xs, s.values_gib, bottom=bottoms, width=width, color=s.colour, label=_short(s.label))
        bottoms = [b + v for b, v in zip(bottoms, s.values_gib, strict=True)]


def _draw_gpu(ax: Axes, spec: ChartSpec) -> None:
    for s in spec.gpu:
        style = "-" if spec.source == "prometheus" else "o-"
        ax.plot(_dates(s.timestamps_s), s.values_gib, style, color=s.colour, label=_short(s.label))
    if spec.gpu_total_gib is not None:
        ax.axhline(spec.gpu_total_gib, color="#000000", linewidth=1, linestyle="--")
    ax.set_ylabel("GPU memory (GiB)")
    ax.set_ylim(0, (spec.gpu_total_gib or ax.get_ylim()[1]) * 1.05)
    if spec.gpu:
        ax.legend(**LEGEND, ncol=2)
    else:
        ax.text(0.5, 0.5, "no GPU memory data", ha="center", va="center", transform=ax.transAxes)


def _draw_markers(axes: list[Axes], spec: ChartSpec) -> None:
    span = max(spec.end_s - spec.start_s, 1.0)
    for i, m in enumerate(spec.markers):
        late = (m.at_s - spec.start_s) / span > LATE  # label to the left of a late marker
        at = _x(m.at_s)
        width = 2.0 if m.kind == "action" else 1.2
        for ax in axes:
            ax.axvline(at, color=m.colour, linestyle=m.linestyle, linewidth=width)
        y = 0.97 - 0.07 * (i % LABEL_ROWS)
        axes[0].text(
            at, y, f"{m.label} " if late else f" {m.label}",
            transform=axes[0].get_xaxis_transform(), fontsize=7, color=m.colour, va="top",
            ha="right" if late else "left",
            bbox={"facecolor": "white", "alpha": 0.7, "linewidth": 0, "pad": 1},
        )  # fmt: skip


def render_png(spec: ChartSpec) -> bytes:
    """The chart as PNG bytes (1000x600 px)."""
    fig = Figure(figsize=(WIDTH_IN, HEIGHT_IN), dpi=DPI, layout="constrained")
    FigureCanvasAgg(fig)
    host, gpu = fig.subplots(2, 1, sharex=True, height_ratios=[3, 2])
    _draw_host(host, spec)
    _draw_gpu(gpu, spec)
    _draw_markers([host, gpu], spec)
    start, end = spec.start_s, spec.end_s
    pad = max((end - start) * 0.03, 300.0)  # a lone snapshot still gets a readable span
    host.set_xlim(_x(start - pad), _x(end + pad))
    gpu.xaxis.set_major_locator(AutoDateLocator(tz=UTC))  # type: ignore[no-untyped-call]
    gpu.xaxis.set_major_formatter(DateFormatter("%H:%M", tz=UTC))  # type: ignore[no-untyped-call]
    gpu.set_xlabel("time (UTC)")
    source = "Prometheus history" if spec.source == "prometheus" else "snapshot + kernel log"
    fig.suptitle(f"{spec.title}  ({source})", fontsize=11)
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    return buf.getvalue()
