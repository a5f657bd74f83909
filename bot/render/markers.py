"""A chart marker's label (``bot.core.diagnosis.history.Marker.label``) in the reader's
language: the chart draws it, the postmortem's story quotes it."""

from __future__ import annotations

import re

from bot.render.catalogs import Translator


def marker_label(text: str, t: Translator) -> str:
    """A marker's label in the reader's language when it is one the core gives (an OOM kill
    names its process as the kernel did; an XID keeps its number); any other as given."""
    m = _OOM_LABEL.fullmatch(text)
    if m is not None:
        scope, process = m.group(1), m.group(2)
        if scope == "global":
            return t.gettext("global OOM kill %(process)s", process=process)
        return t.gettext("cgroup OOM kill %(process)s", process=process)
    fixed = {
        "evicted": t.gettext("evicted"),
        "restart": t.gettext("restart"),
        "restart (OOMKilled)": t.gettext("restart (OOMKilled)"),
        "OOM kill (node_vmstat_oom_kill)": t.gettext("OOM kill (node_vmstat_oom_kill)"),
    }
    return fixed.get(text, text)


#: ``cgroup OOM kill python``: the core's label of a kernel OOM kill (``markers_from``)
_OOM_LABEL = re.compile(r"(global|cgroup) OOM kill (.+)")
