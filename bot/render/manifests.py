"""Kubernetes manifests rendered from ``templates/kube/`` (YAML text -> dict).

Kept in ``bot/render`` because jinja2 lives only here; ``bot.kube`` calls ``render_manifest``
and never sees a template engine. Values reach the YAML through ``| tojson`` (JSON is YAML),
so a hostile name cannot change the document's structure.
"""

from __future__ import annotations

from typing import Any

import yaml

from bot.render.environment import get_environment

#: libyaml's safe loader when built (several times faster), else the pure-Python one
LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def render_manifest(name: str, /, **ctx: Any) -> dict[str, Any]:
    """Render ``templates/kube/<name>`` with ``ctx`` (StrictUndefined) and parse it."""
    # a manifest is not localised: its words are the API's and the YAML's
    text = get_environment(locale="en").get_template(f"kube/{name}").render(**ctx)
    doc = yaml.load(text, Loader=LOADER)  # noqa: S506 - a safe loader (C or Python)
    if not isinstance(doc, dict):
        raise ValueError(f"template kube/{name} did not render a mapping")
    return doc
