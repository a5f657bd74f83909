"""Messages about an action landing (wording in ``templates/slack/<locale>/watching.j2``):
accepted versus applied, the rollout's progress, evictions complete, and what Undo restarts."""

from __future__ import annotations

from typing import Any

from bot.core.model.actions import ActionPlan
from bot.core.remedies.watching import TEMPLATE_VERBS, RolloutProgress, Verdict
from bot.render import environment
from bot.render.blocks import Block, Message, context, section
from bot.render.filters import truncate
from bot.render.sentences import sentence


def _t(locale: str) -> Any:
    return environment.macros("slack", "watching.j2", locale=locale)


def _s(value: Any) -> str:
    return str(value).strip()


def rolls_pods(plan: ActionPlan) -> bool:
    """The plan reaches the pods through a rollout or evictions (applied ≠ accepted)."""
    return any(s.verb in (*TEMPLATE_VERBS, "evict", "resize_pod") for s in plan.steps)


def outcome_extras(plan: ActionPlan, *, state: str, undo: bool, locale: str) -> list[Block]:
    """Context lines under an action's outcome: accepted is not applied yet; Undo restarts
    the pods a second time (never silently)."""
    t = _t(locale)
    blocks: list[Block] = []
    if state in ("succeeded", "partly") and rolls_pods(plan):
        blocks.append(context(_s(t.accepted(plan))))
    template = any(s.verb in TEMPLATE_VERBS for s in plan.steps)
    if undo and template:
        targets = [s.ref.key for s in plan.steps if s.verb in TEMPLATE_VERBS]
        blocks.append(context(_s(t.undo_restarts(plan, targets))))
    elif undo and any(s.verb == "resize_pod" for s in plan.steps):
        blocks.append(context(_s(t.undo_in_place(plan))))
    if state == "undone" and template:
        blocks.append(context(_s(t.undone_restarts(plan))))
    return blocks


def rollout_message(
    progress: RolloutProgress, verdict: Verdict, *, waited_s: float, locale: str
) -> Message:
    text = _s(_t(locale).rollout(progress, verdict, waited_s))
    return truncate(text, 3000), [section(truncate(text, 3000))]


def evictions_message(gone: list[str], left: list[str], *, waited_s: float, locale: str) -> Message:
    text = _s(_t(locale).evictions(gone, left, waited_s))
    return truncate(text, 3000), [section(truncate(text, 3000))]


def modal_notes(plan: ActionPlan, *, locale: str) -> list[Block]:
    """The plan's named warnings (gangs, rollouts, placement) in the confirmation modal."""
    if not plan.notes:
        return []
    said = [sentence("notes", n.code, n.params, fmt="mrkdwn", locale=locale) for n in plan.notes]
    return [section(truncate(_s(_t(locale).modal_notes(said)), 3000))]
