"""The chart is readable where Slack shows it: a 480 px wide preview. Every text on it is
measured in pixels at that width; without history it is a bar chart of the ledger, not one
bar on a time axis. Images: test-artifacts/chart-legibility-*.png."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from matplotlib import image as mpimg
from matplotlib.text import Text

from bot.charts import render_png
from bot.charts.rendering import DPI, PREVIEW_WIDTH_PX, WIDTH_IN, draw
from bot.core.reporting.charts import ChartMarker, ChartSeries, ChartSpec

ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"
T0 = 1_796_083_200.0
#: the smallest text a person reads in a Slack preview without zooming
MIN_PX_AT_PREVIEW = 8.0


def _spec(title: str, times: list[float]) -> ChartSpec:
    def band(key: str, label: str, colour: str, gib: float) -> ChartSeries:
        return ChartSeries(
            key=key, label=label, colour=colour, timestamps_s=times, values_gib=[gib] * len(times)
        )

    return ChartSpec(
        title=title,
        node="gpu-node-01",
        source="snapshot",
        start_s=times[0] - 1800,
        end_s=times[-1],
        host=[
            band("workload:ml/train", "ml-train/train-llm-0", "#009E73", 68.5),
            band("workload:dp/pre", "data-prep/preprocess", "#CC79A7", 61.5),
            band("node:other", "other (rest of pods, kernel, processes)", "#999999", 40),
        ],
        host_total_gib=251.0,
        gpu=[
            ChartSeries(
                key="gpu:0–7",
                label="GPU 0–7 (each)",
                colour="#0072B2",
                timestamps_s=times,
                values_gib=[64.0] * len(times),
            )
        ],
        gpu_total_gib=80.0,
        markers=[
            ChartMarker(
                at_s=times[0] - 1800,
                kind="oom_kill",
                subject="dp/pre",
                label="cgroup OOM kill python",
                colour="#000000",
                linestyle="solid",
            )
        ],
    )


@pytest.mark.parametrize(
    ("name", "title"),
    [("en", "gpu-node-01: at the start"), ("zh", "gpu-node-01：开始时")],
)
def test_every_text_is_at_least_8_px_at_slacks_preview_width(name: str, title: str) -> None:
    spec = _spec(title, [T0, T0 + 600])
    fig = draw(spec, locale="en")
    scale = PREVIEW_WIDTH_PX / (WIDTH_IN * DPI)
    texts = [t for t in fig.findobj(Text) if t.get_text().strip() and t.get_visible()]
    assert any("GPU 0–7" in t.get_text() for t in texts)
    sizes = {t.get_text(): float(t.get_fontsize()) * DPI / 72 * scale for t in texts}
    small = {text: round(px, 1) for text, px in sizes.items() if px < MIN_PX_AT_PREVIEW}
    assert small == {}
    png = render_png(spec, locale="en")
    ARTIFACTS.mkdir(exist_ok=True)
    (ARTIFACTS / f"chart-legibility-{name}.png").write_bytes(png)
    img = mpimg.imread(io.BytesIO(png), format="png")
    assert img.shape[:2] == (600, 1000)


def test_without_history_the_snapshots_are_bars_on_a_category_axis() -> None:
    fig = draw(_spec("gpu-node-01: before/after", [T0, T0 + 600]), locale="en")
    host, gpu = fig.axes
    labels = [t.get_text() for t in gpu.get_xticklabels()]
    assert labels[0].startswith("before · ") and labels[1].startswith("after · ")
    assert host.get_xlim() == pytest.approx((-0.75, 1.75))  # two bars, not a 40-minute span
    # the kernel's earlier OOM kill is left of the first bar, its time in its label
    assert any(t.get_text().strip().startswith("23:30 cgroup OOM kill") for t in host.texts)
