"""What a timeline entry says (``TimelineEntry.said``) in the reader's language: one clause
from ``templates/sentences/timeline.j2``. An entry that names no code (a person's words, or a
row written by an older version in English) is shown as stored."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from bot.render import environment
from bot.render.errors import error_text
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
    text = " ".join(str(module.entry(keyed_error(said, locale), fallback)).split())
    return ESCAPERS[fmt](text)


def keyed_error(said: Mapping[str, Any], locale: str) -> dict[str, Any]:
    """``said`` with the error it quotes (``error_key``, ``error_params``: a keyed
    ``GpunodeError``, as a crash keeps it) worded in ``locale``; its English ``error`` (the
    error's own text) in English, or when it names no key or a key this version lacks."""
    params = said.get("params")
    if locale == "en" or not isinstance(params, Mapping) or not params.get("error_key"):
        return dict(said)
    quoted = params.get("error_params")
    error = error_text(
        str(params["error_key"]),
        dict(quoted) if isinstance(quoted, Mapping) else {},
        str(params.get("error") or ""),
        locale,
    )
    return {**said, "params": {**params, "error": error}}


def found_text(found: object, *, locale: str) -> str:
    """What the reconciler found of an interrupted action (``found``: its clauses as codes
    and params; an older row's English text as stored), plain text in ``locale``."""
    module = environment.macros("sentences", "timeline.j2", locale=locale)
    return " ".join(str(module.found(found)).split())


def stale_reason(params: Mapping[str, Any], *, locale: str) -> str:
    """Why a plan was refused as stale (``params``: ``reason`` and its values, as
    ``Why``/the action's stored result name them), plain text in ``locale``."""
    module = environment.macros("sentences", "timeline.j2", locale=locale)
    return " ".join(str(module.stale_reason(dict(params))).split())


def unanswered_text(u: Mapping[str, Any], *, locale: str) -> str:
    """One write that got no answer and what its re-read found (an entry of an action's
    stored ``unanswered``), plain text in ``locale``, its wait in seconds as the audit log
    writes it."""
    module = environment.macros("sentences", "timeline.j2", locale=locale)
    return " ".join(str(module.unanswered(dict(u), seconds=True)).split())
