"""Slack messages of an incident thread beyond the diagnosis itself: the root status line
and short notices, plus ``render_diagnosis_messages`` (the one brief diagnosis message).

Each function returns ``(fallback_text, blocks)``; wording in ``templates/slack/<locale>/``.
Notice params are raw; the templates escape every string with the mrkdwn escape.
"""

from __future__ import annotations

import re

from bot.core.diagnosis.findings import Diagnosis
from bot.core.model.evidence import EvidenceBundle
from bot.render import environment
from bot.render.blocks import (
    Block,
    Dashboard,
    Message,
    context,
    diagnosis_messages,
    section,
)
from bot.render.filters import truncate

#: emphasis marks only at a word's edge (``_x_``, ``*x*``; never the ``_`` in ``snake_case``
#: or ``max_bytes``), code fences and ticks, and emoji codes not glued to a digit or a word
#: (``:warning:``, but not the ``:30:`` of ``10:30:00``)
_MARKUP = re.compile(
    r"```|`|(?<![\w*])[*_](?=\S)|(?<=\S)[*_](?![\w*])|(?<![\w:]):[a-z0-9_+-]+:(?![\w:]) ?"
)
#: Slack's control sequences (``<@U123>``, ``<#C1|x>``, ``<!date^...|...>``, links): kept whole
_CONTROL = re.compile(r"<[^<>\s][^<>]*>")


def plain_fallback(mrkdwn_text: str) -> str:
    """A notification fallback: the mrkdwn without emphasis and emoji. Mentions, channel
    links and dates stay intact, and entities stay escaped: Slack parses ``text`` as mrkdwn
    too, so unescaping would turn a hostile ``&lt;!channel&gt;`` back into a mention."""
    parts: list[str] = []
    last = 0
    for m in _CONTROL.finditer(mrkdwn_text):
        parts += [_MARKUP.sub("", mrkdwn_text[last : m.start()]), m.group(0)]
        last = m.end()
    parts.append(_MARKUP.sub("", mrkdwn_text[last:]))
    return " ".join("".join(parts).split())


def render_root(
    *,
    incident_id: str,
    node: str,
    state: str,
    headline: str,
    opened_by: str,
    progress: str | None,
    locale: str,
) -> Message:
    """Root message of an incident thread. ``headline`` is already mrkdwn (the verdict
    sentence from ``verdict_headline``) or plain text from the caller (escaped here if it
    contains markup characters that are not entities)."""
    t = environment.macros("slack", "notices.j2", locale=locale)
    status = str(t.root_status(incident_id, node, state)).strip()
    lines = [status]
    if headline:
        lines.append(str(t.root_headline(headline)).strip())
    blocks: list[Block] = [section("\n".join(lines))]
    meta = [str(t.root_opened_by(opened_by)).strip()]
    if progress:
        meta.append(str(t.root_progress(progress)).strip())
    blocks.append(context(*meta))
    text = plain_fallback(status) + (f": {plain_fallback(headline)}" if headline else "")
    return truncate(text, 3000), blocks


def progress_text(key: str, locale: str, *, code: str = "") -> str:
    """The root message's progress line (``opening``, ``running_job``, ``failed``), plain
    text in ``locale``; ``render_root`` escapes it."""
    t = environment.macros("slack", "notices.j2", locale=locale)
    return str(t.progress_step(key, code)).strip()


def verdict_headline(diagnosis: Diagnosis, *, locale: str) -> str:
    """The verdict as one mrkdwn sentence (for the root message's headline)."""
    from bot.render.sentences import sentence

    v = diagnosis.verdict
    return sentence("verdicts", v.cause, v.params, fmt="mrkdwn", subject=v.subject, locale=locale)


def render_diagnosis_messages(
    diagnosis: Diagnosis,
    *,
    incident_id: str | None,
    bundle: EvidenceBundle | None = None,
    locale: str,
    dashboard: Dashboard | None = None,
) -> list[Message]:
    """What a diagnosis posts in the incident thread: the brief message (verdict, a number
    per team, the recommended tier, the buttons), within Slack's limits; the rest is behind
    its Details button (``blocks.details_view``)."""
    return diagnosis_messages(
        diagnosis, bundle, incident=incident_id, locale=locale, dashboard=dashboard
    )
