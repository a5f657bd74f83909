"""The one line a re-diagnosis leaves in the thread (``bot.core.state_change``): "since
14:02: trainer +2.1 GiB, 1 new OOM kill", in the thread's language, and the note left on a
message the current state no longer needs."""

from __future__ import annotations

from bot.core.state_change import StateChange
from bot.render import environment
from bot.render.blocks import Message, context
from bot.render.catalogs import translator
from bot.render.filters import fmt_bytes, mrkdwn, truncate
from bot.render.messages import plain_fallback


def cause_name(cause: str, locale: str) -> str:
    """A verdict cause as people name it ("container at its memory limit")."""
    common = environment.macros("sentences", "common.j2", locale=locale)
    return str(common.cause_name(cause)).strip()


def state_change_line(change: StateChange, locale: str) -> str:
    """The change as one mrkdwn line."""
    t = translator(locale)
    parts = [
        f"`{mrkdwn(m.label)}` {'+' if m.delta_bytes > 0 else '−'}{fmt_bytes(abs(m.delta_bytes))}"
        for m in change.movers
    ]
    if change.new_kills:
        parts.append(t.ngettext("%(num)d new OOM kill", "%(num)d new OOM kills", change.new_kills))
    if change.verdict_changed:
        parts.append(
            t.gettext(
                "verdict: %(before)s → %(after)s",
                before=cause_name(change.verdict_before, locale),
                after=cause_name(change.verdict_after, locale),
            )
        )
    since = t.datetime(change.since, fmt="HH:mm")
    if not parts:
        return t.gettext(
            ":arrows_counterclockwise: Re-diagnosed: no change since %(time)s; the pinned "
            "current state is up to date.",
            time=since,
        )
    return t.gettext(
        ":arrows_counterclockwise: Since %(time)s: %(changes)s. The pinned current state "
        "above is updated.",
        time=since,
        changes=t.gettext(", ").join(parts),
    )


def state_change_message(change: StateChange, locale: str) -> Message:
    line = state_change_line(change, locale)
    return truncate(plain_fallback(line), 3000), [context(line)]


def superseded_message(locale: str) -> Message:
    """What a message of the earlier state says once the current state needs fewer."""
    line = translator(locale).gettext("_Merged into the pinned current state above._")
    return plain_fallback(line), [context(line)]
