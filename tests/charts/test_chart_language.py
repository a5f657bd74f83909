"""A chart speaks its reader's language: titles, axes and the ledger's named bands come from
the catalog, and Chinese is drawn with Noto Sans CJK (Debian's fonts-noto-cjk), never as
missing-glyph boxes: matplotlib warns on a glyph its fonts lack, and here that is an error."""

from __future__ import annotations

import io
import warnings
from pathlib import Path

import pytest
from matplotlib import rc_context
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.text import Text

from bot.charts.rendering import draw, render_png
from bot.cli.diagnose import write_chart
from bot.core.reporting.analysis import analyze
from bot.core.reporting.charts import ChartMarker, ChartSpec, chart_spec
from tests.services.fakes import load_scenario


def _spec() -> ChartSpec:
    """The seed's chart, with a kernel OOM kill marked as the core marks one
    (``markers_from``: its scope and the process as the kernel named it)."""
    bundle, view = load_scenario("seed")
    d = analyze(bundle, view, now=bundle.collected_at)
    spec = chart_spec(d, bundle)
    kill = ChartMarker(
        at_s=spec.end_s,
        kind="oom_kill",
        subject="ml/preprocess",
        label="cgroup OOM kill python",
        params={"scope": "cgroup", "process": "python"},
        colour="#d62728",
        linestyle="-",
    )
    return spec.model_copy(update={"markers": [*spec.markers, kill]})


def _texts(fig: Figure) -> list[str]:
    return [t.get_text() for t in fig.findobj(Text) if t.get_text()]


def test_a_chinese_chart_has_chinese_title_axes_and_bands() -> None:
    texts = _texts(draw(_spec(), locale="zh-CN"))
    joined = "\n".join(texts)
    for words in (
        "gpu-node-01：内存",
        "主机内存（GiB）",
        "GPU 显存（GiB）",
        "快照 + 内核日志",
        "GPU 0–7（每块）",  # the eight identical devices, one series
        "cgroup OOM kill：python",  # the kernel's kill, the process named as the kernel did
    ):
        assert words in joined, texts
    for english in (
        "host memory",
        "GPU memory (GiB)",
        "memory  (",
        "snapshot + kernel log",
        "(each)",
        "OOM kill python",
    ):
        assert english not in joined


def test_an_english_chart_keeps_its_english_words() -> None:
    texts = "\n".join(_texts(draw(_spec(), locale="en")))
    assert "gpu-node-01: memory  (snapshot + kernel log)" in texts
    assert "GPU 0–7 (each)" in texts
    assert "host memory (GiB)" in texts
    assert "cgroup OOM kill python" in texts


def test_a_chinese_chart_draws_every_glyph_from_a_font_it_has() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # "Glyph ... missing from font(s)" fails the test
        png = render_png(_spec(), locale="zh-CN")
    assert png.startswith(b"\x89PNG")


def test_the_missing_glyph_check_fails_without_the_cjk_font() -> None:
    """The check above can fail: the same Chinese title with only DejaVu Sans warns."""
    with rc_context({"font.family": ["DejaVu Sans"]}):
        fig = Figure()
        FigureCanvasAgg(fig)
        fig.suptitle("主机内存")
        with warnings.catch_warnings(), pytest.raises(UserWarning, match="missing from font"):
            warnings.simplefilter("error")
            fig.savefig(io.BytesIO(), format="png")


def test_the_terminals_chart_file_is_drawn_in_the_language_asked_for(tmp_path: Path) -> None:

    bundle, view = load_scenario("seed")
    d = analyze(bundle, view, now=bundle.collected_at)
    written: dict[str, bytes] = {}
    for locale in ("en", "zh-CN"):
        path = tmp_path / f"{locale}.png"
        write_chart(d, bundle, str(path), locale=locale)
        written[locale] = path.read_bytes()
    assert written["en"] == render_png(chart_spec(d, bundle), locale="en")
    assert written["zh-CN"] == render_png(chart_spec(d, bundle), locale="zh-CN")
    assert written["en"] != written["zh-CN"]
