"""A chart's title in the reader's language: drawn on the chart (``bot.charts``) and given
to the file that shares it (``bot.slack.presenter``). Here, not beside the drawing, so that
the bot titles a chart its worker process drew without importing matplotlib (0.6 s on the
event loop, issue #25)."""

from __future__ import annotations

from bot.core.reporting.charts import ChartSpec
from bot.render.catalogs import Translator


def title(spec: ChartSpec, t: Translator) -> str:
    """The chart's title in the reader's language when it is one of the titles gpunode
    gives (``NODE: memory``, the postmortem's start and end, an action's before and after);
    any other title as given."""
    known = {
        f"{spec.node}: memory": t.gettext("%(node)s: memory", node=spec.node),
        f"{spec.node}: at the start": t.gettext("%(node)s: at the start", node=spec.node),
        f"{spec.node}: at the end, actions marked": t.gettext(
            "%(node)s: at the end, actions marked", node=spec.node
        ),
        f"{spec.node}: memory before and after the action": t.gettext(
            "%(node)s: memory before and after the action", node=spec.node
        ),
    }
    return known.get(spec.title, spec.title)
