"""Block Kit messages for an incident thread, built in Python (structure) from template
pieces (wording, ``templates/slack/<locale>/``).

Three messages per diagnosis: evidence, talking points, actions. Every message respects
Slack's limits (reference/slack.md section 3) by construction: section text <= 3000,
header <= 150, <= 50 blocks, and a cumulative text budget under Slack's undocumented
~12k ``msg_blocks_too_long``; what does not fit is cut and replaced by a pointer to the
full report. ``bot.slack.blockkit.validate_blocks`` checks the result in tests.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from datetime import datetime
from typing import Any

from bot.core.evidence import EvidenceBundle
from bot.core.findings import Diagnosis
from bot.render import environment
from bot.render.filters import truncate
from bot.render.sentences import fact_text, sentence
from bot.render.views import DiagnosisView, build_view

Block = dict[str, Any]
Message = tuple[str, list[Block]]

MAX_BLOCKS = 50
SECTION_TEXT = 3000
FIELD_TEXT = 2000
HEADER_TEXT = 150
CONTEXT_ELEMENTS = 10
#: Slack rejects messages whose blocks hold ~12-13k characters in total (bolt-js#2509);
#: stay well below with room for the pointer.
TEXT_BUDGET = 11_000
FALLBACK_TEXT = 3000
#: facts shown under each talking point in Slack (the Markdown report lists them all)
FACTS_PER_POINT = 4
ACTION_IDS = {1: "gpunode_tier1", 2: "gpunode_tier2", 3: "gpunode_tier3"}
BUTTON_STYLES = {1: "danger", 2: "primary", 3: "danger"}
#: the button under the evidence that shares the prevention kit (value: the incident id)
PREVENTION_ACTION = "gpunode_prevention"


def _m(name: str, locale: str) -> Any:
    return environment.macros("slack", f"{name}.j2", locale=locale)


def _s(macro: Any, *args: Any) -> str:
    return str(macro(*args)).strip()


def header(text: str) -> Block:
    return {"type": "header", "text": {"type": "plain_text", "text": truncate(text, HEADER_TEXT)}}


def section(text: str) -> Block:
    return {"type": "section", "text": {"type": "mrkdwn", "text": truncate(text, SECTION_TEXT)}}


def context(*texts: str) -> Block:
    elems = [{"type": "mrkdwn", "text": truncate(t, FIELD_TEXT)} for t in texts if t]
    return {"type": "context", "elements": elems[:CONTEXT_ELEMENTS]}


def divider() -> Block:
    return {"type": "divider"}


def pack(title: str, lines: Iterable[str], *, limit: int = SECTION_TEXT) -> list[Block]:
    """Lines packed into as few sections as the per-section limit allows (title first)."""
    out: list[Block] = []
    current = title
    for line in lines:
        line = truncate(line, limit - 1)
        candidate = f"{current}\n{line}" if current else line
        if len(candidate) > limit:
            out.append(section(current))
            current = line
        else:
            current = candidate
    if current:
        out.append(section(current))
    return out


def block_text_size(value: Any) -> int:
    """Characters of every ``text`` string in a block tree (what Slack's budget counts)."""
    if isinstance(value, dict):
        return sum(
            len(v) if k == "text" and isinstance(v, str) else block_text_size(v)
            for k, v in value.items()
        )
    if isinstance(value, list):
        return sum(block_text_size(v) for v in value)
    return 0


def fit(blocks: list[Block], pointer: str, *, tail: list[Block] | None = None) -> list[Block]:
    """Keep blocks in order while they fit the block count and the text budget; when
    something is cut, a context block with ``pointer`` says where the rest is. ``tail``
    blocks (e.g. the buttons) are always kept, after the pointer."""
    tail = tail or []
    room = MAX_BLOCKS - len(tail)
    budget = TEXT_BUDGET - block_text_size(tail)
    if len(blocks) <= room and block_text_size(blocks) <= budget:
        return blocks + tail
    note = context(pointer)
    budget -= block_text_size(note)
    kept: list[Block] = []
    used = 0
    for b in blocks:
        size = block_text_size(b)
        if len(kept) + 1 >= room or used + size > budget:
            break
        kept.append(b)
        used += size
    return [*kept, note, *tail]


#: a dashboard for the node and the incident's window: (URL, from, to), see bot.core.links
Dashboard = tuple[str, datetime, datetime]


def evidence_message(
    view: DiagnosisView,
    *,
    incident: str | None = None,
    locale: str = "en",
    dashboard: Dashboard | None = None,
) -> Message:
    t = _m("evidence", locale)
    verdict = sentence(
        "verdicts",
        view.verdict.cause,
        view.verdict.params,
        fmt="mrkdwn",
        subject=view.verdict.subject,
        locale=locale,
    )
    blocks: list[Block] = [
        header(_s(t.header, view)),
        section(_s(t.verdict, view, verdict)),
        context(_s(t.meta, view)),
        *([context(_s(t.dashboard, *dashboard))] if dashboard is not None else []),
        section(_s(t.ledger, view)),
    ]
    if view.pods:
        pod_lines = [_s(t.amount_line, p) for p in view.pods]
        if view.pods_hidden:
            pod_lines.append(_s(t.pods_hidden, view))
        blocks += pack(_s(t.pods_title, view), pod_lines)
    if view.kernel or view.other:
        lines = [_s(t.amount_line, a) for a in [*view.kernel, *view.other]]
        blocks += pack(_s(t.kernel_title, view), lines)
    if view.gpus:
        blocks += pack(_s(t.gpus_title, view), [_s(t.gpu_line, g) for g in view.gpus])
    if view.dra:
        blocks += pack(_s(t.dra_title, view), [_s(t.dra_line, d) for d in view.dra])
    if view.findings:
        blocks.append(divider())
        lines = [
            _s(
                t.finding_line,
                f,
                sentence(
                    "findings",
                    f.code,
                    f.params,
                    fmt="mrkdwn",
                    subject=f.subject,
                    severity=f.severity,
                    locale=locale,
                ),
            )
            for f in view.findings
        ]
        blocks += pack(_s(t.findings_title, view), lines)
    tail = [context(_s(t.unverified, view))] if view.unverified else []
    if incident:
        tail.append(_prevention_button(incident, locale))
    blocks = fit(blocks, _s(t.pointer, incident, view.node), tail=tail)
    return truncate(_s(t.fallback, view, verdict), FALLBACK_TEXT), blocks


def _prevention_button(incident: str, locale: str) -> Block:
    label = truncate(_s(_m("prevention", locale).button), 75)
    button = {
        "type": "button",
        "action_id": PREVENTION_ACTION,
        "text": {"type": "plain_text", "text": label},
        "value": incident,
    }
    return {"type": "actions", "block_id": "gpunode_prevention", "elements": [button]}


def talking_points_message(
    view: DiagnosisView, *, incident: str | None = None, locale: str = "en"
) -> Message:
    t = _m("talking_points", locale)
    blocks: list[Block] = [header(_s(t.header, view))]
    for audience, points in (("ai_team", view.ai_points), ("ops_team", view.ops_points)):
        blocks.append(section(_s(t.audience_title, audience, len(points))))
        previous: list[object] | None = None
        for tp in points:
            text = sentence("talking_points", tp.key, tp.params, fmt="mrkdwn", locale=locale)
            blocks.append(section(_s(t.point, tp, text)))
            if tp.facts and list(tp.facts) == previous:
                # several points often rest on one measurement: say so once, not five times
                blocks.append(context(_s(t.same_facts)))
                continue
            previous = list(tp.facts)
            facts = [fact_text(f, fmt="mrkdwn", locale=locale) for f in tp.facts[:FACTS_PER_POINT]]
            if len(tp.facts) > FACTS_PER_POINT:
                facts.append(_s(t.more_facts, len(tp.facts) - FACTS_PER_POINT))
            blocks.append(context(_s(t.facts, facts) if facts else _s(t.no_facts)))
    pointer = _s(_m("evidence", locale).pointer, incident, view.node)
    return truncate(_s(t.fallback, view), FALLBACK_TEXT), fit(blocks, pointer)


def button_value(incident: str | None, plan_id: str) -> str:
    return json.dumps({"incident": incident, "plan_id": plan_id}, separators=(",", ":"))


def actions_message(
    view: DiagnosisView, *, incident: str | None = None, locale: str = "en"
) -> Message:
    t = _m("actions", locale)
    blocks: list[Block] = [header(_s(t.header, view)), context(_s(t.intro, view))]
    buttons: list[Block] = []
    for pl in view.plans:
        warnings = [sentence("warnings", w, {}, fmt="mrkdwn", locale=locale) for w in pl.warnings]
        warnings += [
            sentence("notes", n.code, n.params, fmt="mrkdwn", locale=locale) for n in pl.notes
        ]
        blocks.append(section(_s(t.plan, pl, warnings)))
        if pl.available and pl.tier in ACTION_IDS:
            buttons.append(
                {
                    "type": "button",
                    "action_id": ACTION_IDS[pl.tier],
                    "text": {"type": "plain_text", "text": truncate(_s(t.button, pl.tier), 75)},
                    "value": button_value(incident, pl.plan_id),
                    "style": BUTTON_STYLES[pl.tier],
                }
            )
    if not view.plans:
        blocks.append(section(_s(t.none_available, view)))
    tail = (
        [{"type": "actions", "block_id": "gpunode_tiers", "elements": buttons}] if buttons else []
    )
    pointer = _s(_m("evidence", locale).pointer, incident, view.node)
    return truncate(_s(t.fallback, view), FALLBACK_TEXT), fit(blocks, pointer, tail=tail)


def diagnosis_messages(
    diagnosis: Diagnosis,
    bundle: EvidenceBundle | None = None,
    *,
    incident: str | None = None,
    locale: str = "en",
    dashboard: Dashboard | None = None,
) -> list[Message]:
    """[evidence, talking points, actions], each ``(fallback_text, blocks)``; ``dashboard``:
    a link the evidence message carries under its first line."""
    view = build_view(diagnosis, bundle)
    return [
        evidence_message(view, incident=incident, locale=locale, dashboard=dashboard),
        talking_points_message(view, incident=incident, locale=locale),
        actions_message(view, incident=incident, locale=locale),
    ]
