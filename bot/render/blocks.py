"""Block Kit messages for an incident thread, built in Python (structure) from template
pieces (wording, ``templates/slack/<locale>/``).

A diagnosis posts one brief message (``brief_message``: the verdict, one number per team,
the recommended tier with its relief, the buttons; issue #23 §1, at most 1,500 characters
and 12 lines at thread width). Everything else is behind its **Details** button: a modal
(``details_view``) and the report attached to the thread; ``talking_points_message`` and
``actions_message`` build the modal's sections. Every message respects
Slack's limits (reference/slack.md section 3) by construction: section text <= 3000,
header <= 150, <= 50 blocks, and a cumulative text budget under Slack's undocumented
~12k ``msg_blocks_too_long``; what does not fit is cut and replaced by a pointer to the
full report. ``bot.slack.blockkit.validate_blocks`` checks the result in tests.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from datetime import datetime
from typing import Any

from bot.core.diagnosis.findings import Diagnosis, Fact
from bot.core.model.evidence import EvidenceBundle
from bot.render import environment
from bot.render.filters import truncate
from bot.render.sentences import fact_text, sentence, value_text
from bot.render.views import DiagnosisView, build_view, decisive_fact

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
ACTION_IDS = {1: "gpunode_tier1", 2: "gpunode_tier2", 3: "gpunode_tier3"}
BUTTON_STYLES = {1: "danger", 2: "primary", 3: "danger"}
#: the button under the evidence that shares the prevention kit (value: the incident id)
PREVENTION_ACTION = "gpunode_prevention"
#: the button under the brief message that opens the details (value: the incident id)
DETAILS_ACTION = "gpunode_details"
DETAILS_CALLBACK = "gpunode_details"
#: Slack's limits for a modal (reference/slack.md section 3)
VIEW_BLOCKS = 100
VIEW_TITLE = 24
#: a talking point's words up to its first colon are its headline when they are this short
HEADLINE_CHARS = 90
#: a fact's source is shown whole in the brief message up to this length, else its scheme
SHORT_SOURCE = 24
STANCE_ICONS = {"supports": ":heavy_check_mark:", "contradicts": ":x:", "neutral": ":bulb:"}
_COLON = re.compile(r": |：")


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


#: a dashboard for the node and the incident's window: (URL, from, to), see bot.core.reporting.links
Dashboard = tuple[str, datetime, datetime]


def _holders(t: Any, view: DiagnosisView) -> list[Block]:
    """The top pods, then the kernel and other holders, one packed section each."""
    blocks: list[Block] = []
    if view.pods:
        pod_lines = [_s(t.amount_line, p) for p in view.pods]
        if view.pods_hidden:
            pod_lines.append(_s(t.pods_hidden, view))
        blocks += pack(_s(t.pods_title, view), pod_lines)
    if view.kernel or view.other:
        lines = [_s(t.amount_line, a) for a in [*view.kernel, *view.other]]
        blocks += pack(_s(t.kernel_title, view), lines)
    return blocks


def _finding_lines(t: Any, view: DiagnosisView, locale: str) -> list[str]:
    """One line per finding, its sentence in ``locale``."""
    return [
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


def _prevention_element(incident: str, locale: str) -> Block:
    label = truncate(_s(_m("prevention", locale).button), 75)
    return {
        "type": "button",
        "action_id": PREVENTION_ACTION,
        "text": {"type": "plain_text", "text": label},
        "value": incident,
    }


def headline(sentence_mrkdwn: str) -> str:
    """A point's words before its first colon (": " or a full-width one), when that clause
    is short and not inside a code span: "Your GPU memory is not the problem". Else ""."""
    for m in _COLON.finditer(sentence_mrkdwn):
        if m.start() > HEADLINE_CHARS:
            break
        before = sentence_mrkdwn[: m.start()]
        if before.count("`") % 2 == 0:
            return before
    return ""


def short_source(source: str) -> str:
    """``procfs:/proc/meminfo`` stays; ``nvml:GPU-8b93…`` becomes ``nvml``."""
    return source if len(source) <= SHORT_SOURCE else source.split(":", 1)[0]


def _tier_buttons(view: DiagnosisView, incident: str | None, locale: str) -> list[Block]:
    """The tier buttons, labelled short ("Tier 3"): the recommended tier is named in the
    message and every tier's steps are in Details; the confirmation modal says the rest."""
    t = _m("evidence", locale)
    return [
        {
            "type": "button",
            "action_id": ACTION_IDS[pl.tier],
            "text": {"type": "plain_text", "text": truncate(_s(t.tier_short, pl.tier), 75)},
            "value": button_value(incident, pl.plan_id),
            "style": BUTTON_STYLES[pl.tier],
        }
        for pl in view.plans
        if pl.available and pl.tier in ACTION_IDS
    ]


def brief_message(
    view: DiagnosisView,
    *,
    incident: str | None = None,
    locale: str,
    dashboard: Dashboard | None = None,
) -> Message:
    """The one message a diagnosis posts: header, the verdict, one line per team (the point
    that answers its usual position, with its decisive number and source), the recommended
    tier with its relief, then the tier, Details and Prevention kit buttons."""
    t = _m("evidence", locale)
    verdict = _verdict(view, locale)
    lines = [_s(t.short_verdict, view)]
    for team in view.teams:
        said = sentence(
            "talking_points", team.point.key, team.point.params, fmt="mrkdwn", locale=locale
        )
        lines.append(
            _s(
                t.team_line,
                team.audience,
                STANCE_ICONS[team.point.stance],
                headline(said),
                value_text(team.fact, fmt="mrkdwn", locale=locale),
                short_source(team.fact.source),
            )
        )
    if view.recommended is not None:
        lines.append(_s(t.recommended, view.recommended))
    else:
        why = next(
            (
                sentence("warnings", w, {}, fmt="mrkdwn", locale=locale)
                for pl in view.plans
                if not pl.available
                for w in pl.warnings
            ),
            "",
        )
        lines.append(_s(t.no_recommendation, view, why))
    blocks: list[Block] = [
        header(_s(t.header, view)),
        section("\n".join(lines)),
        context(_s(t.brief_meta, view)),
        *([context(_s(t.dashboard, *dashboard))] if dashboard is not None else []),
    ]
    buttons = _tier_buttons(view, incident, locale)
    if incident:
        buttons.append(
            {
                "type": "button",
                "action_id": DETAILS_ACTION,
                "text": {"type": "plain_text", "text": truncate(_s(t.details_button), 75)},
                "value": incident,
            }
        )
        buttons.append(_prevention_element(incident, locale))
    if buttons:
        blocks.append({"type": "actions", "block_id": "gpunode_tiers", "elements": buttons})
    return truncate(_s(t.fallback, view, verdict), FALLBACK_TEXT), blocks


def talking_points_message(
    view: DiagnosisView, *, incident: str | None = None, locale: str
) -> Message:
    """Each point with its one decisive number and its source (``views.decisive_fact``);
    the full evidence list is said once, in the details, never under each point."""
    t = _m("talking_points", locale)
    blocks: list[Block] = [header(_s(t.header, view))]
    for audience, points in (("ai_team", view.ai_points), ("ops_team", view.ops_points)):
        blocks.append(section(_s(t.audience_title, audience, len(points))))
        for tp in points:
            text = sentence("talking_points", tp.key, tp.params, fmt="mrkdwn", locale=locale)
            blocks.append(section(_s(t.point, tp, text)))
            fact = decisive_fact(tp)
            shown = fact_text(fact, fmt="mrkdwn", locale=locale) if fact is not None else ""
            blocks.append(context(shown if shown else _s(t.no_facts)))
    pointer = _s(_m("evidence", locale).pointer, incident, view.node)
    return truncate(_s(t.fallback, view), FALLBACK_TEXT), fit(blocks, pointer)


def all_facts(view: DiagnosisView) -> list[Fact]:
    """Every fact behind the verdict and the points, each once (same key, value and
    source), in the order they are first cited."""
    seen: set[tuple[str, str, str]] = set()
    out: list[Fact] = []
    for f in [
        *view.verdict.facts,
        *(f for tp in [*view.ai_points, *view.ops_points] for f in tp.facts),
    ]:
        ident = (f.key, str(f.value), f.source)
        if ident not in seen:
            seen.add(ident)
            out.append(f)
    return out


def button_value(incident: str | None, plan_id: str) -> str:
    return json.dumps({"incident": incident, "plan_id": plan_id}, separators=(",", ":"))


def actions_message(view: DiagnosisView, *, incident: str | None = None, locale: str) -> Message:
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
    locale: str,
    dashboard: Dashboard | None = None,
) -> list[Message]:
    """What a diagnosis posts in its thread: the brief message alone (a list, so that a
    surface posts whatever it is given); ``dashboard``: a link it carries under the
    verdict."""
    view = build_view(diagnosis, bundle)
    return [brief_message(view, incident=incident, locale=locale, dashboard=dashboard)]


#: processes the Details modal lists (the report attached to the thread has them all)
DETAILS_PROCESSES = 10


def details_view(
    diagnosis: Diagnosis,
    bundle: EvidenceBundle | None = None,
    *,
    incident: str,
    locale: str,
) -> dict[str, Any]:
    """The **Details** modal (``views.open``): sections for the evidence, the talking
    points in full (each with its decisive number), every number cited (once), the
    findings, the GPUs (identical devices on one line), the processes and the tiers;
    within a modal's 100 blocks."""
    view = build_view(diagnosis, bundle)
    t = _m("evidence", locale)
    title = _s(t.section_title, "evidence")
    blocks: list[Block] = [
        section(_s(t.verdict, view, _verdict(view, locale))),
        context(_s(t.meta, view)),
    ]
    blocks += [header(title), section(_s(t.ledger, view))]
    blocks += _holders(t, view)
    _, points = talking_points_message(view, incident=incident, locale=locale)
    blocks += [header(_s(t.section_title, "points")), *points[1:]]
    facts = [fact_text(f, fmt="mrkdwn", locale=locale, source_limit=None) for f in all_facts(view)]
    if facts:
        blocks += [header(_s(t.section_title, "facts")), *pack("", facts)]
    if view.findings:
        lines = _finding_lines(t, view, locale)
        blocks += [header(_s(t.section_title, "findings")), *pack("", lines)]
    if view.gpu_groups or view.dra:
        blocks.append(header(_s(t.section_title, "gpus")))
    if view.gpu_groups:
        lines = [_s(t.gpu_group_line, g) for g in view.gpu_groups]
        blocks += pack(_s(t.gpus_title, view), lines)
    if view.dra:  # GPUs the node's pods hold through DRA ResourceClaims
        blocks += pack(_s(t.dra_title, view), [_s(t.dra_line, d) for d in view.dra])
    if bundle is not None and bundle.processes:
        top = sorted(bundle.processes, key=lambda p: (-p.rss_bytes, p.pid))[:DETAILS_PROCESSES]
        lines = [_s(t.process_line, p, _s(t.process_owner, p)) for p in top]
        blocks += [header(_s(t.section_title, "processes")), *pack("", lines)]
    _, tiers = actions_message(view, incident=incident, locale=locale)
    plans = [b for b in tiers if b.get("type") == "section"]
    if plans:
        blocks += [header(_s(t.section_title, "tiers")), *plans]
    if view.unverified:
        blocks.append(context(_s(t.unverified, view)))
    blocks.append(context(_s(t.attached, incident)))
    if len(blocks) > VIEW_BLOCKS:
        blocks = [
            *blocks[: VIEW_BLOCKS - 2],
            context(_s(t.pointer, incident, view.node)),
            blocks[-1],
        ]
    return {
        "type": "modal",
        "callback_id": DETAILS_CALLBACK,
        "title": {"type": "plain_text", "text": truncate(_s(t.details_title, view), VIEW_TITLE)},
        "close": {"type": "plain_text", "text": truncate(_s(t.details_close), VIEW_TITLE)},
        "private_metadata": incident,
        "blocks": blocks,
    }


def _verdict(view: DiagnosisView, locale: str) -> str:
    return sentence(
        "verdicts",
        view.verdict.cause,
        view.verdict.params,
        fmt="mrkdwn",
        subject=view.verdict.subject,
        locale=locale,
    )
