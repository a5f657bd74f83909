"""Draw a ``ChartSpec`` into a PNG (matplotlib's object API, Agg canvas, no pyplot).

The canvas is attached explicitly (``FigureCanvasAgg``), so no backend is selected globally and
no display is ever needed."""

from __future__ import annotations

import io
import itertools
from datetime import UTC, datetime
from typing import Any

import numpy as np
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.dates import AutoDateLocator, DateFormatter, date2num
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle

from bot.core.charts import ChartSeries, ChartSpec

WIDTH_IN, HEIGHT_IN, DPI = 10.0, 6.0, 100  # 1000x600 px: readable in a Slack thread preview
#: markers further apart than this share a label row; closer ones step down so labels don't overlap
LABEL_ROWS = 4
LEGEND_ROW_PX = 11  # one legend row at 7 pt
BAR_FRACTION = 0.04  # a snapshot bar's width as a share of the window
MARGINS = {"left": 0.065, "right": 0.76, "top": 0.93, "bottom": 0.085, "hspace": 0.08}
LATE = 0.7  # markers past 70 % of the window carry their label on the left


def _x(t: float) -> float:
    """Matplotlib's date axis unit (days since its epoch) for Unix seconds."""
    return float(date2num(datetime.fromtimestamp(t, UTC)))  # type: ignore[no-untyped-call]


def _short(label: str, limit: int = 36) -> str:
    """Legend text within ``limit`` characters (long pod names would squeeze the plot)."""
    return label if len(label) <= limit else label[: limit - 1] + "…"


def _dates(ts: list[float]) -> Any:
    """All of ``ts`` in the date unit at once (per-point ``date2num`` costs most of a render)."""
    if not ts:
        return np.asarray([], dtype=float)
    return _x(ts[0]) + (np.asarray(ts, dtype=float) - ts[0]) / 86400.0


def _legend(ax: Axes, entries: list[tuple[str, str]]) -> None:
    """A legend right of the plot (never over a band or a marker's label): a colour swatch and
    a black label per entry. Placed directly: matplotlib's ``Legend`` packs its entries with
    offset boxes and measures each text several times, half of a render for 20 series."""
    height_px = ax.get_position().height * HEIGHT_IN * DPI
    step = LEGEND_ROW_PX / height_px
    rows = max(int(1 / step), 1)
    for k, (label, colour) in enumerate(entries[:rows]):
        y = 1.0 - (k + 0.5) * step
        ax.add_patch(
            Rectangle((1.015, y - step * 0.35), 0.018, step * 0.7, transform=ax.transAxes,
                      facecolor=colour, edgecolor="none", clip_on=False)
        )  # fmt: skip
        ax.text(1.04, y, _short(label), transform=ax.transAxes, fontsize=7, va="center")


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
    entries = [(s.label, s.colour) for s in reversed(bands)]  # top band first, as drawn
    if spec.host_total_gib is not None:
        entries.insert(0, ("MemTotal", "#000000"))
    _legend(ax, entries)


def bar_positions(xs: list[float], width: float) -> list[float]:
    """Bar centres: at their times, unless two collections are closer than a bar is wide;
    then side by side, ending at the last one (each bar keeps its own time label)."""
    if all(b - a >= width for a, b in itertools.pairwise(xs)):
        return list(xs)
    step = width * 1.15
    return [xs[-1] - (len(xs) - 1 - i) * step for i in range(len(xs))]


def _snapshot_bars(ax: Axes, spec: ChartSpec, bands: list[ChartSeries]) -> None:
    """One stacked bar per collection (no history to draw bands from), labelled with its time."""
    times = bands[0].timestamps_s
    span_days = max(spec.end_s - spec.start_s, 600.0) / 86400
    width = span_days * BAR_FRACTION
    xs = bar_positions([float(x) for x in _dates(times)], width)
    bottoms = [0.0] * len(xs)
    for s in bands:
        ax.bar(xs, s.values_gib, bottom=bottoms, width=width, color=s.colour, label=_short(s.label))
        bottoms = [b + v for b, v in zip(bottoms, s.values_gib, strict=True)]
    if len(xs) > 1:
        for x, t, top in zip(xs, times, bottoms, strict=True):
            stamp = datetime.fromtimestamp(t, UTC).strftime("%H:%M:%S")
            ax.text(x, top, stamp, fontsize=6, ha="center", va="bottom", rotation=90)


def _draw_gpu(ax: Axes, spec: ChartSpec) -> None:
    for s in spec.gpu:
        style = "-" if spec.source == "prometheus" else "o-"
        ax.plot(_dates(s.timestamps_s), s.values_gib, style, color=s.colour, label=_short(s.label))
    if spec.gpu_total_gib is not None:
        ax.axhline(spec.gpu_total_gib, color="#000000", linewidth=1, linestyle="--")
    ax.set_ylabel("GPU memory (GiB)")
    ax.set_ylim(0, (spec.gpu_total_gib or ax.get_ylim()[1]) * 1.05)
    if spec.gpu:
        _legend(ax, [(s.label, s.colour) for s in spec.gpu])
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
    fig = Figure(figsize=(WIDTH_IN, HEIGHT_IN), dpi=DPI)
    FigureCanvasAgg(fig)
    host, gpu = fig.subplots(2, 1, sharex=True, height_ratios=[3, 2])
    # fixed margins, legends in the right-hand strip: a layout engine would cost a third of
    # the render (it measures every artist twice)
    fig.subplots_adjust(**MARGINS)
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
    # zlib level 1: a fifth of the default's encode time for a few more KiB (flat colours)
    fig.savefig(buf, format="png", pil_kwargs={"compress_level": 1})
    return buf.getvalue()
