"""The one way to word a short outcome: a ``Notice(key, params)`` or a ``Refused(code,
params)`` (``bot.core.outcomes``) as a Slack message in a language.

Presenters call ``render_told``; the use cases never do (they hand the outcome to their
``ThreadPort``). Wording lives in ``templates/slack/<locale>/notices.j2`` (notices),
``acting.j2`` (the action flow's notices) and ``refusals.j2`` (one macro per refusal code);
params are raw and the templates escape every string. An unknown key or code renders
something readable (never crashes a reply).
"""

from __future__ import annotations

from typing import Any

from bot.core.outcomes import Notice, Refused, Told
from bot.render import environment
from bot.render.blocks import Message, section
from bot.render.filters import truncate
from bot.render.messages import plain_fallback

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
ACTING_KEYS = ("approval_pending", "vote_counted", "interrupted")


def told_mrkdwn(told: Told, locale: str) -> str:
    """The outcome as one mrkdwn paragraph in ``locale``."""
    if isinstance(told, Refused):
        t = environment.macros("slack", "refusals.j2", locale=locale)
        macro = getattr(t, told.code, None)
        body = macro(told.params) if macro is not None else t.unknown(told.code, told.params)
        return ":no_entry: " + str(body).strip()
    return _notice_mrkdwn(told, locale)


def _notice_mrkdwn(told: Notice, locale: str) -> str:
    if told.key in ACTING_KEYS:
        t: Any = environment.macros("slack", "acting.j2", locale=locale)
        return str(getattr(t, f"notice_{told.key}")(**told.params)).strip()
    t = environment.macros("slack", "notices.j2", locale=locale)
    macro = getattr(t, told.key, None) if told.key in NOTICE_KEYS else None
    return str(macro(told.params) if macro is not None else t.unknown(told.key)).strip()


def render_told(told: Told, locale: str) -> Message:
    """``(fallback_text, blocks)`` of the outcome in ``locale``, within Slack's limits."""
    body = told_mrkdwn(told, locale)
    return truncate(plain_fallback(body), 3000), [section(body)]
