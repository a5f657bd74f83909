"""The one line a re-diagnosis leaves in the thread (``bot.core.reporting.state_change``): "since
14:02: trainer +2.1 GiB, 1 new OOM kill", in the thread's language, and the note left on a
message the current state no longer needs."""

from __future__ import annotations

from bot.core.reporting.state_change import StateChange
from bot.render import environment
from bot.render.blocks import Message, context
from bot.render.catalogs import Translator, translator
from bot.render.filters import fmt_bytes, mrkdwn, truncate
from bot.render.messages import plain_fallback


def cause_name(cause: str, locale: str) -> str:
    """A verdict cause as people name it ("container at its memory limit")."""
    common = environment.macros("sentences", "common.j2", locale=locale)
    return str(common.cause_name(cause)).strip()


def _label(label: str, t: Translator) -> str:
    """A mover as people name it: a workload in code type, a ledger category in words."""
    categories = {
        "kernel_slab_unreclaimable": t.gettext("unreclaimable kernel slab"),
        "kernel_slab_reclaimable": t.gettext("reclaimable kernel slab"),
        "kernel_page_tables": t.gettext("kernel page tables"),
        "kernel_stacks": t.gettext("kernel stacks"),
        "kernel_other": t.gettext("other kernel memory"),
        "page_cache": t.gettext("page cache"),
        "system": t.gettext("processes outside Kubernetes"),
        "unattributed": t.gettext("unattributed memory"),
    }
    named = categories.get(label)
    return mrkdwn(named) if named is not None else f"`{mrkdwn(label)}`"


def state_change_line(change: StateChange, locale: str) -> str:
    """The change as one mrkdwn line."""
    t = translator(locale)
    parts = [
        f"{_label(m.label, t)} {'+' if m.delta_bytes > 0 else '−'}{fmt_bytes(abs(m.delta_bytes))}"
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
