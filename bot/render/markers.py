"""A chart marker (``bot.core.diagnosis.history.Marker``, ``ChartMarker``) in the reader's
language, worded from its ``kind`` and ``params``: the chart draws it, the postmortem's
detection and story quote it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from bot.render.catalogs import Translator


def marker_label(kind: str, params: Mapping[str, Any], label: str, t: Translator) -> str:
    """The marker's words: an OOM kill names its process as the kernel did, an XID keeps its
    number, an action says what its timeline entry says (``bot.render.timeline``). A marker
    whose params say nothing the presenter knows (a label stored by a tool) is shown as
    stored (``label``)."""
    if kind == "oom_kill":
        process = params.get("process")
        if params.get("scope") == "global" and process:
            return t.gettext("global OOM kill %(process)s", process=process)
        if params.get("scope") == "cgroup" and process:
            return t.gettext("cgroup OOM kill %(process)s", process=process)
        if params.get("counter") == "node_vmstat_oom_kill":
            return t.gettext("OOM kill (node_vmstat_oom_kill)")
    elif kind == "xid" and params.get("code") is not None:
        return t.gettext("XID %(code)s", code=params["code"])
    elif kind == "eviction" and params.get("reason") == "Evicted":
        return t.gettext("evicted")
    elif kind == "restart":
        if params.get("reason") == "OOMKilled":
            return t.gettext("restart (OOMKilled)")
        if not params:
            return t.gettext("restart")
    elif kind == "action" and params.get("code"):
        from bot.render.timeline import entry_text

        return entry_text(params, label, locale=t.locale, fmt="text")
    return label
