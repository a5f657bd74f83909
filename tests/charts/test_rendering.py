"""The PNG a chart spec renders to: a real PNG of the stated size, with its bands drawn.

Images are saved under test-artifacts/ so a person can look at them.
"""

from __future__ import annotations

import io
import math
from pathlib import Path

import numpy as np
import pytest
from matplotlib import image as mpimg

from bot.charts import render_png
from bot.core.reporting.charts import (
    CACHE_COLOUR,
    KERNEL_COLOUR,
    MARKER_STYLE,
    OTHER_COLOUR,
    POD_COLOURS,
    ChartMarker,
    ChartSeries,
    ChartSpec,
)

ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
T0 = 1_796_083_200.0  # 2026-12-01 00:00 UTC
STEP = 15.0
N = int(6 * 3600 / STEP) + 1


def _band(key: str, colour: str, fn) -> ChartSeries:  # type: ignore[no-untyped-def]
    ts = [T0 + i * STEP for i in range(N)]
    return ChartSeries(
        key=key, label=key, colour=colour, timestamps_s=ts, values_gib=[fn(i) for i in range(N)]
    )


def _marker(kind: str, at_s: float, label: str) -> ChartMarker:
    colour, style = MARKER_STYLE[kind]  # type: ignore[index]
    return ChartMarker(
        at_s=at_s,
        kind=kind,
        subject="n1",
        label=label,
        colour=colour,
        linestyle=style,  # type: ignore[arg-type]
    )


def _history_spec() -> ChartSpec:
    pods = [
        _band(f"pod:ml/p{i}", POD_COLOURS[i], lambda j, i=i: 8.0 + i + math.sin(j / 50))
        for i in range(3)
    ]
    slab = _band("node:slab_unreclaimable", KERNEL_COLOUR, lambda j: 6 + max(0, j - 240) * 0.008)
    cache = _band("node:page_cache", CACHE_COLOUR, lambda j: 20.0)
    other = _band("node:other", OTHER_COLOUR, lambda j: 10.0)
    gpus = [_band(f"gpu:{i}", POD_COLOURS[i], lambda j, i=i: 20.0 + 10 * i) for i in range(4)]
    return ChartSpec(
        title="gpu-node-01: memory",
        node="gpu-node-01",
        source="prometheus",
        start_s=T0,
        end_s=T0 + 6 * 3600,
        host=[*pods, slab, cache, other],
        host_total_gib=251,
        gpu=gpus,
        gpu_total_gib=80,
        markers=[
            _marker("oom_kill", T0 + 5.5 * 3600, "global OOM kill python"),
            _marker("xid", T0 + 2 * 3600, "XID 79"),
            _marker("action", T0 + 5.8 * 3600, "tier 3 succeeded"),
        ],
    )


def _snapshot_spec() -> ChartSpec:
    at = T0 + 3600
    bar = [
        ChartSeries(
            key="pod:ml/a", label="ml/a", colour=POD_COLOURS[0], timestamps_s=[at], values_gib=[60]
        ),
        ChartSeries(
            key="node:slab_unreclaimable",
            label="slab",
            colour=KERNEL_COLOUR,
            timestamps_s=[at],
            values_gib=[140],
        ),
    ]
    return ChartSpec(
        title="n1: memory",
        node="n1",
        source="snapshot",
        start_s=at - 600,
        end_s=at,
        host=bar,
        host_total_gib=251,
        markers=[_marker("oom_kill", at - 600, "global OOM kill python")],
    )


def _has_colour(img: np.ndarray, hex_colour: str, *, min_pixels: int = 50) -> bool:
    rgb = np.array([int(hex_colour[i : i + 2], 16) for i in (1, 3, 5)]) / 255.0
    close = np.all(np.abs(img[:, :, :3] - rgb) < 0.02, axis=2)
    return int(close.sum()) >= min_pixels


@pytest.mark.parametrize(
    ("name", "spec", "colours"),
    [
        ("chart-history", _history_spec(), [KERNEL_COLOUR, CACHE_COLOUR, POD_COLOURS[0]]),
        ("chart-snapshot", _snapshot_spec(), [KERNEL_COLOUR, POD_COLOURS[0]]),
    ],
)
def test_the_chart_is_a_png_of_the_stated_size_with_its_bands_drawn(
    name: str, spec: ChartSpec, colours: list[str]
) -> None:
    png = render_png(spec, locale="en")
    ARTIFACTS.mkdir(exist_ok=True)
    (ARTIFACTS / f"{name}.png").write_bytes(png)
    assert png.startswith(PNG_MAGIC)
    img = mpimg.imread(io.BytesIO(png), format="png")
    assert img.shape[:2] == (600, 1000)
    for colour in colours:
        assert _has_colour(img, colour), colour


def test_a_band_not_in_the_spec_is_not_in_the_picture() -> None:
    spec = _snapshot_spec()
    img = mpimg.imread(io.BytesIO(render_png(spec, locale="en")), format="png")
    assert not _has_colour(img, CACHE_COLOUR)


@pytest.mark.parametrize(
    ("xs", "width", "expected"),
    [
        ([1.0, 2.0, 3.0], 0.5, [1.0, 2.0, 3.0]),  # far apart: at their own times
        ([1.0, 1.01], 0.5, [1.01 - 0.575, 1.01]),  # too close: side by side, last in place
    ],
)
def test_snapshot_bars_stay_at_their_times_unless_they_would_overlap(
    xs: list[float], width: float, expected: list[float]
) -> None:
    from bot.charts.rendering import bar_positions

    assert bar_positions(xs, width) == pytest.approx(expected)
