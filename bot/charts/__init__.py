"""Chart rendering: the only package that imports matplotlib (headless, Agg backend).

``render_png(spec) -> bytes`` draws a ``bot.core.reporting.charts.ChartSpec``; it decides nothing
(the spec says what to draw). It uses matplotlib's object API (``Figure`` + ``FigureCanvasAgg``),
never pyplot: no global figure registry, no GUI backend, safe to call from a worker thread.
"""

from bot.charts.rendering import render_png

__all__ = ["render_png"]
