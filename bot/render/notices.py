"""The one way to word a short outcome: a ``Notice(key, params)`` or a ``Refused(code,
params)`` (``bot.core.reporting.outcomes``) as a Slack message in a language.

Presenters call ``render_told``; the use cases never do (they hand the outcome to their
``ThreadPort``). Wording lives in ``templates/slack/notices.j2`` (notices),
``acting.j2`` (the action flow's notices) and ``refusals.j2`` (one macro per refusal code);
params are raw and the templates escape every string. An unknown key or code renders
something readable (never crashes a reply).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from bot.core.reporting.outcomes import (
    AuditAnchored,
    Diagnosed,
    EvictionsWatched,
    Notice,
    Refused,
    RolloutWatched,
    RootLine,
    Told,
)
from bot.render import environment
from bot.render.blocks import Message, context, section
from bot.render.catalogs import translator
from bot.render.errors import error_text, refusal_mrkdwn
from bot.render.filters import truncate
from bot.render.messages import (
    plain_fallback,
    progress_text,
    render_diagnosis_messages,
    render_root,
    verdict_headline,
)
from bot.render.watching import evictions_message, rollout_message

NOTICE_KEYS = (
    "diagnose_started",
    "diagnose_joined",
    "diagnose_joined_running",
    "diagnose_failed",
    "node_not_found",
    "usage_error",
    "help",
    "status_list",
    "top_nodes",
    "alert_firing",
    "alert_resolved",
    "alerts_skipped",
    "resolved",
    "timeline_uploaded",
    "channel_not_served",
    "command_failed",
    "command_started",
    "malformed_request",
)
#: the action flow's notices, worded beside its other messages (``acting.j2``)
ACTING_KEYS = ("approval_pending", "vote_counted", "interrupted", "form_expired")


def told_mrkdwn(told: Refused | Notice, locale: str) -> str:
    """The outcome as one mrkdwn paragraph in ``locale``."""
    if isinstance(told, Refused):
        return ":no_entry: " + refusal_mrkdwn(told.code, told.params, locale)
    return _notice_mrkdwn(told, locale)


def refusal_text(code: str, params: Mapping[str, Any], locale: str) -> str:
    """A refusal's reason (the words the Slack refusal has) as plain text in ``locale``, for
    a terminal: without emphasis, emoji and Slack's escapes (the caller escapes for its
    output; mentions stay ``<@U123>``)."""
    said = plain_fallback(refusal_mrkdwn(code, params, locale))
    return said.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")


#: notices that quote an error, and the parameter its words go in
ERROR_FIELDS = {"diagnose_failed": "reason", "command_failed": "message", "usage_error": "message"}


def _worded_error(told: Notice, locale: str) -> Notice:
    """The notice with its error worded in ``locale`` (``error_key``/``error_params``, from
    ``GpunodeError.key``/``params``); unchanged when it carries no key."""
    if told.key == "top_nodes":  # each cluster left out, with its error
        failures = [
            {
                **f,
                "message": error_text(
                    str(f.get("key") or ""),
                    f.get("params") or {},
                    str(f.get("message", "")),
                    locale,
                ),
            }
            for f in told.params.get("failures") or []
        ]
        return told.model_copy(update={"params": {**told.params, "failures": failures}})
    field = ERROR_FIELDS.get(told.key)
    key = told.params.get("error_key")
    if field is None or not key:
        return told
    fallback = str(told.params.get(field, ""))
    params = told.params.get("error_params") or {}
    words = error_text(str(key), params, fallback, locale)
    return told.model_copy(update={"params": {**told.params, field: words}})


def _notice_mrkdwn(told: Notice, locale: str) -> str:
    told = _worded_error(told, locale)
    if told.key in ACTING_KEYS:
        t: Any = environment.macros("slack", "acting.j2", locale=locale)
        return str(getattr(t, f"notice_{told.key}")(**told.params)).strip()
    t = environment.macros("slack", "notices.j2", locale=locale)
    macro = getattr(t, told.key, None) if told.key in NOTICE_KEYS else None
    return str(macro(told.params) if macro is not None else t.unknown(told.key)).strip()


def render_told(
    told: Refused | Notice | RootLine | RolloutWatched | EvictionsWatched | AuditAnchored,
    locale: str,
) -> Message:
    """``(fallback_text, blocks)`` of the outcome in ``locale``, within Slack's limits."""
    if isinstance(told, AuditAnchored):
        line = translator(locale).gettext(
            "audit anchor · row %(row)s · sha256 `%(hash)s`", row=told.row_id, hash=told.row_hash
        )
        return truncate(line, 3000), [context(line)]
    if isinstance(told, RootLine):
        return _root(told, locale)
    if isinstance(told, RolloutWatched):
        return rollout_message(told.progress, told.verdict, waited_s=told.waited_s, locale=locale)
    if isinstance(told, EvictionsWatched):
        return evictions_message(told.gone, told.left, waited_s=told.waited_s, locale=locale)
    body = told_mrkdwn(told, locale)
    return truncate(plain_fallback(body), 3000), [section(body)]


def render_messages(told: Told, locale: str) -> list[Message]:
    """Every message the outcome posts (a diagnosis is three), in ``locale``."""
    if isinstance(told, Diagnosed):
        return render_diagnosis_messages(
            told.diagnosis,
            incident_id=told.incident_id,
            bundle=told.bundle,
            locale=locale,
            dashboard=told.dashboard,
        )
    if isinstance(told, Refused | Notice | RootLine | RolloutWatched | EvictionsWatched):
        return [render_told(told, locale)]
    if isinstance(told, AuditAnchored):
        return [render_told(told, locale)]
    raise TypeError(f"a {told.kind} is worded by bot.render.acting")


def _root(told: RootLine, locale: str) -> Message:
    progress = None
    if told.progress is not None:
        progress = progress_text(told.progress, locale, code=told.failure_code)
    headline = verdict_headline(told.diagnosis, locale=locale) if told.diagnosis else ""
    return render_root(
        incident_id=told.incident_id,
        node=told.node,
        state=told.state,
        headline=headline,
        opened_by=told.opened_by,
        progress=progress,
        locale=locale,
    )
