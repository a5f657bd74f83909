"""What a timeline entry says (``TimelineEntry.said``) in the reader's language: one clause
from ``templates/sentences/timeline.j2``. An entry that names no code (a person's words, or a
row written by an older version in English) is shown as stored."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from bot.render import environment
from bot.render.filters import ESCAPERS
from bot.render.sentences import Fmt


def entry_text(
    said: Mapping[str, Any] | None, fallback: str, *, locale: str, fmt: Fmt = "text"
) -> str:
    """The clause for ``said`` (``{"code", "params"}``), escaped for ``fmt``; ``fallback``
    (the entry's stored text) when ``said`` is None or names a code this version lacks."""
    if not said or not said.get("code"):
        return ESCAPERS[fmt](fallback)
    module = environment.macros("sentences", "timeline.j2", locale=locale)
    text = " ".join(str(module.entry(dict(said), fallback)).split())
    return ESCAPERS[fmt](text)


def stale_reason(params: Mapping[str, Any], *, locale: str) -> str:
    """Why a plan was refused as stale (``params``: ``reason`` and its values, as
    ``Why``/the action's stored result name them), plain text in ``locale``."""
    module = environment.macros("sentences", "timeline.j2", locale=locale)
    return " ".join(str(module.stale_reason(dict(params))).split())
