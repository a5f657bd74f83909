"""Draw a ``ChartSpec`` into a PNG (matplotlib's object API, Agg canvas, no pyplot).

The canvas is attached explicitly (``FigureCanvasAgg``), so no backend is selected globally and
no display is ever needed."""

from __future__ import annotations

import io
import itertools
import re
from datetime import UTC, datetime
from typing import Any

import numpy as np
from matplotlib import rc_context
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.dates import AutoDateLocator, DateFormatter, date2num
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle

from bot.core.reporting.charts import ChartSeries, ChartSpec
from bot.render.catalogs import Translator, translator
from bot.render.chart_titles import title
from bot.render.markers import marker_label

#: 1000x600 px, drawn on a 6.25x3.75 in canvas at 160 dpi: Slack previews the image 480 px
#: wide (0.48 of it), so a point must be large in pixels; 8 pt is 17.8 px here, 8.5 px in the
#: preview (tests/charts/test_legibility.py measures every text at that width)
WIDTH_IN, HEIGHT_IN, DPI = 6.25, 3.75, 160
PREVIEW_WIDTH_PX = 480
#: DejaVu Sans first (Latin, digits, arrows), then the CJK font Debian's fonts-noto-cjk has
FONT_FAMILY = ["DejaVu Sans", "Noto Sans CJK SC"]
FONT_PT = 8  # legend, marker labels, bar stamps: the smallest text on the chart
#: markers further apart than this share a label row; closer ones step down so labels don't overlap
LABEL_ROWS = 4
LEGEND_ROW_PX = int(FONT_PT * DPI / 72 * 1.3)  # one legend row
BAR_FRACTION = 0.04  # a snapshot bar's width as a share of the window
MARGINS = {"left": 0.1, "right": 0.7, "top": 0.92, "bottom": 0.12, "hspace": 0.1}
LATE = 0.7  # markers past 70 % of the window carry their label on the left


def _x(t: float) -> float:
    """Matplotlib's date axis unit (days since its epoch) for Unix seconds."""
    return float(date2num(datetime.fromtimestamp(t, UTC)))  # type: ignore[no-untyped-call]


def _short(label: str, limit: int = 24) -> str:
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
            Rectangle(
                (1.015, y - step * 0.35),
                0.018,
                step * 0.7,
                transform=ax.transAxes,
                facecolor=colour,
                edgecolor="none",
                clip_on=False,
            )
        )
        ax.text(1.04, y, _short(label), transform=ax.transAxes, fontsize=FONT_PT, va="center")


def _draw_host(ax: Axes, spec: ChartSpec, t: Translator) -> None:
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
    ax.set_ylabel(t.gettext("host memory (GiB)"), fontsize=FONT_PT)
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
            ax.text(x, top, stamp, fontsize=FONT_PT, ha="center", va="bottom", rotation=90)


def _draw_gpu(ax: Axes, spec: ChartSpec, t: Translator) -> None:
    for s in spec.gpu:
        style = "-" if spec.source == "prometheus" else "o-"
        ax.plot(_dates(s.timestamps_s), s.values_gib, style, color=s.colour, label=_short(s.label))
    _gpu_frame(ax, spec, t)


def _gpu_frame(ax: Axes, spec: ChartSpec, t: Translator) -> None:
    if spec.gpu_total_gib is not None:
        ax.axhline(spec.gpu_total_gib, color="#000000", linewidth=1, linestyle="--")
    ax.set_ylabel(t.gettext("GPU memory (GiB)"), fontsize=FONT_PT)
    ax.set_ylim(0, (spec.gpu_total_gib or ax.get_ylim()[1]) * 1.05)
    if spec.gpu:
        _legend(ax, [(s.label, s.colour) for s in spec.gpu])
    else:
        ax.text(
            0.5,
            0.5,
            "no GPU memory data",
            ha="center",
            va="center",
            transform=ax.transAxes,
            fontsize=FONT_PT,
        )


def _draw_markers(axes: list[Axes], spec: ChartSpec, *, at: Any = None, last: float = 0) -> None:
    """A line per marker, its label beside it. ``at``: Unix seconds -> x (default: the date
    axis); a category axis (no history) passes its own and the label carries the time."""
    span = max(spec.end_s - spec.start_s, 1.0)
    for i, m in enumerate(spec.markers):
        x = _x(m.at_s) if at is None else at(m.at_s)
        # a late marker carries its label on its left (on a category axis: right of the last bar)
        late = (m.at_s - spec.start_s) / span > LATE if at is None else x > last
        if at is not None and x < 0:
            late = False
        width = 2.0 if m.kind == "action" else 1.2
        for ax in axes:
            ax.axvline(x, color=m.colour, linestyle=m.linestyle, linewidth=width)
        label = m.label if at is None else f"{datetime.fromtimestamp(m.at_s, UTC):%H:%M} {m.label}"
        y = 0.97 - 0.09 * (i % LABEL_ROWS)
        axes[0].text(
            x,
            y,
            f"{label} " if late else f" {label}",
            transform=axes[0].get_xaxis_transform(),
            fontsize=FONT_PT,
            color=m.colour,
            va="top",
            ha="right" if late else "left",
            bbox={"facecolor": "white", "alpha": 0.7, "linewidth": 0, "pad": 1},
        )


def category_x(times: list[float]) -> Any:
    """Unix seconds -> a position on the snapshots' category axis (bar i at x = i): a moment
    before the first collection sits left of its bar, after the last right of it, between
    two collections between their bars."""

    def at(t: float) -> float:
        if t < times[0]:
            return -0.4
        if t > times[-1]:
            return len(times) - 1 + 0.4
        for i, (a, b) in enumerate(itertools.pairwise(times)):
            if a <= t <= b:
                return i + (0.5 if b > a else 0.0)
        return 0.0

    return at


def _snapshot_chart(host: Axes, gpu: Axes, spec: ChartSpec, t: Translator) -> None:
    """No history: the ledger as stacked bars, one per collection, on a category axis (a
    time axis would stretch one bar over minutes of nothing); GPUs as bars beside them."""
    bands = [s for s in spec.host if s.values_gib]
    times = (
        bands[0].timestamps_s if bands else sorted({t for g in spec.gpu for t in g.timestamps_s})
    )
    xs = list(range(len(times)))
    bottoms = [0.0] * len(xs)
    for s in bands:
        host.bar(xs, s.values_gib, bottom=bottoms, width=0.5, color=s.colour)
        bottoms = [b + v for b, v in zip(bottoms, s.values_gib, strict=True)]
    if spec.host_total_gib is not None:
        host.axhline(spec.host_total_gib, color="#000000", linewidth=1)
    host.set_ylabel(t.gettext("host memory (GiB)"), fontsize=FONT_PT)
    host.set_ylim(0, (spec.host_total_gib or host.get_ylim()[1]) * 1.05)
    entries = [(s.label, s.colour) for s in reversed(bands)]
    if spec.host_total_gib is not None:
        entries.insert(0, ("MemTotal", "#000000"))
    _legend(host, entries)
    width = 0.5 / max(len(spec.gpu), 1)
    for k, g in enumerate(spec.gpu):
        pos = {t: i for i, t in enumerate(times)}
        gx = [pos.get(t, 0) - 0.25 + width * (k + 0.5) for t in g.timestamps_s]
        gpu.bar(gx, g.values_gib, width=width * 0.9, color=g.colour)
    _gpu_frame(gpu, spec, t)
    labels = [f"{datetime.fromtimestamp(t, UTC):%H:%M:%S}" for t in times]
    if len(labels) == 2:
        labels = [
            t.gettext("before · %(time)s", time=labels[0]),
            t.gettext("after · %(time)s", time=labels[1]),
        ]
    gpu.set_xticks(xs, labels)
    host.set_xlim(-0.75, len(xs) - 0.25)
    gpu.set_xlabel(t.gettext("collected at (UTC)"), fontsize=FONT_PT)
    _draw_markers([host, gpu], spec, at=category_x(times) if times else None, last=len(xs) - 1)


def render_pngs(charts: dict[str, ChartSpec], locale: str) -> dict[str, bytes]:
    """Each spec as a PNG with its words in ``locale`` (what a worker process is sent:
    ``bot.working.Named("bot.charts.rendering:render_pngs")``)."""
    return {key: render_png(spec, locale=locale) for key, spec in charts.items()}


def render_png(spec: ChartSpec, *, locale: str) -> bytes:
    """The chart as PNG bytes (1000x600 px), its words in ``locale``."""
    fig = draw(spec, locale=locale)
    buf = io.BytesIO()
    # zlib level 1: a fifth of the default's encode time for a few more KiB (flat colours)
    fig.savefig(buf, format="png", pil_kwargs={"compress_level": 1})
    return buf.getvalue()


def draw(spec: ChartSpec, *, locale: str) -> Figure:
    """The chart as a matplotlib Figure (``render_png`` saves it; tests measure its text).
    Text falls back to Noto Sans CJK for Chinese (a zh-CN title or pod label), glyph by
    glyph; each text keeps the family it was created with, so the context ends here."""
    with rc_context({"font.family": FONT_FAMILY}):
        t = translator(locale)
        return _draw(localized(spec, t), t)


def localized(spec: ChartSpec, t: Translator) -> ChartSpec:
    """The spec with its fixed words (the title the core or a caller gives, the ledger's
    named bands, GPU labels) in the reader's language; pod and workload names stay as they
    are."""
    bands = {
        "kernel slab (unreclaimable)": t.gettext("kernel slab (unreclaimable)"),
        "page cache": t.gettext("page cache"),
        "other (rest of pods, kernel, processes)": t.gettext(
            "other (rest of pods, kernel, processes)"
        ),
    }

    def label(s: ChartSeries) -> ChartSeries:
        if s.label in bands:
            return s.model_copy(update={"label": bands[s.label]})
        m = _GPU_LABEL.fullmatch(s.label)
        if m is not None:
            return s.model_copy(update={"label": t.gettext("GPU %(index)s", index=m.group(1))})
        m = _GPUS_LABEL.fullmatch(s.label)
        if m is not None:  # identical devices collapsed into one series
            return s.model_copy(
                update={"label": t.gettext("GPU %(devices)s (each)", devices=m.group(1))}
            )
        return s

    return spec.model_copy(
        update={
            "host": [label(s) for s in spec.host],
            "gpu": [label(s) for s in spec.gpu],
            "markers": [
                m.model_copy(update={"label": marker_label(m.kind, m.params, m.label, t)})
                for m in spec.markers
            ],
        }
    )


#: ``GPU 3``: the core's label of a device's series
_GPU_LABEL = re.compile(r"GPU (\d+)")
#: ``GPU 0–7 (each)``: the core's label of identical devices drawn as one series
_GPUS_LABEL = re.compile(r"GPU ([\d–, ]+) \(each\)")


def _draw(spec: ChartSpec, t: Translator) -> Figure:
    fig = Figure(figsize=(WIDTH_IN, HEIGHT_IN), dpi=DPI)
    FigureCanvasAgg(fig)
    host, gpu = fig.subplots(2, 1, sharex=True, height_ratios=[3, 2])
    # fixed margins, legends in the right-hand strip: a layout engine would cost a third of
    # the render (it measures every artist twice)
    fig.subplots_adjust(**MARGINS)
    for ax in (host, gpu):
        ax.tick_params(labelsize=FONT_PT)
    if spec.source == "snapshot" and (spec.host or spec.gpu):
        _snapshot_chart(host, gpu, spec, t)
    else:
        _draw_host(host, spec, t)
        _draw_gpu(gpu, spec, t)
        _draw_markers([host, gpu], spec)
        start, end = spec.start_s, spec.end_s
        pad = max((end - start) * 0.03, 300.0)  # a lone snapshot still gets a readable span
        host.set_xlim(_x(start - pad), _x(end + pad))
        gpu.xaxis.set_major_locator(AutoDateLocator(tz=UTC))  # type: ignore[no-untyped-call]
        gpu.xaxis.set_major_formatter(DateFormatter("%H:%M", tz=UTC))  # type: ignore[no-untyped-call]
        gpu.set_xlabel(t.gettext("time (UTC)"), fontsize=FONT_PT)
    source = (
        t.gettext("Prometheus history")
        if spec.source == "prometheus"
        else t.gettext("snapshot + kernel log")
    )
    fig.suptitle(f"{title(spec, t)}  ({source})", fontsize=FONT_PT + 1)
    return fig
