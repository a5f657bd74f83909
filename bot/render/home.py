"""The Home tab (``views.publish``): open incidents, the approvals waiting for the person
looking, recent diagnoses, in that person's language. The sections are bounded by
``bot.core.reporting.home`` (10, 10, 5 rows), so the view stays far inside Slack's 100 blocks; the
lines are within a section's 3,000 characters by construction (ids, node names, a cause)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from bot.core.reporting.home import HomeApproval, HomeDiagnosis, HomeIncident, HomeSummary
from bot.render.blocks import Block, context, divider, header, section
from bot.render.catalogs import Translator, translator
from bot.render.filters import mrkdwn
from bot.render.state import cause_name

#: Slack's limit of blocks in a view (reference/slack.md section 3)
VIEW_BLOCKS_MAX = 100
CALLBACK_ID = "gpunode_home"


def _state(state: str, t: Translator) -> str:
    names = {
        "investigating": t.gettext("Investigating"),
        "mitigating": t.gettext("Mitigating"),
        "resolved": t.gettext("Resolved"),
    }
    return names.get(state, state)


def _ago(moment: datetime, now: datetime, t: Translator) -> str:
    return t.gettext(
        "%(duration)s ago", duration=t.duration(max(0.0, (now - moment).total_seconds()))
    )


def _who(user: str) -> str:
    return f"<@{mrkdwn(user)}>" if user[:1] in ("U", "W") else mrkdwn(user)


def _incident(i: HomeIncident, now: datetime, t: Translator, locale: str) -> Block:
    head = f"*{mrkdwn(i.incident_id)}* · `{mrkdwn(i.node)}` · {mrkdwn(_state(i.state, t))}"
    cause = cause_name(i.cause, locale) if i.cause else t.gettext("not diagnosed yet")
    channel = f"<#{mrkdwn(i.channel)}>" if i.channel else "—"
    where = t.gettext(
        "opened %(ago)s in %(channel)s", ago=_ago(i.opened_at, now, t), channel=channel
    )
    return section(f"{head}\n{mrkdwn(cause)} · {where}")


def _approval(a: HomeApproval, now: datetime, t: Translator) -> Block:
    left = max(0.0, (a.expires_at - now).total_seconds())
    line = t.gettext(
        "*Tier %(tier)s* on `%(node)s` (%(incident)s), requested by %(who)s",
        tier=a.tier,
        node=mrkdwn(a.node),
        incident=mrkdwn(a.incident_id),
        who=_who(a.requester),
    )
    more = t.ngettext("%(num)d approval needed", "%(num)d approvals needed", a.remaining)
    expires = t.gettext("expires in %(duration)s", duration=t.duration(left))
    where = f"<#{mrkdwn(a.channel)}>" if a.channel else ""
    return section(f"{line}\n{more} · {expires}" + (f" · {where}" if where else ""))


def _diagnosis(d: HomeDiagnosis, now: datetime, t: Translator, locale: str) -> str:
    return (
        f"• `{mrkdwn(d.node)}` · {mrkdwn(d.incident_id)} · {_ago(d.at, now, t)} · "
        f"{mrkdwn(cause_name(d.cause, locale))} · {mrkdwn(_state(d.state, t))}"
    )


def render_home(summary: HomeSummary, locale: str) -> dict[str, Any]:
    """The Home view for ``summary.user`` in ``locale``."""
    t = translator(locale)
    now = summary.at
    blocks: list[Block] = [header(t.gettext("GPU node incidents"))]

    blocks.append(section("*" + t.gettext("Open incidents") + "*"))
    if not summary.incidents:
        blocks.append(context(t.gettext("No open incidents.")))
    blocks += [_incident(i, now, t, locale) for i in summary.incidents]
    if summary.more_incidents:
        more = t.ngettext(
            "and %(num)d more: `/gpunode status` lists them all",
            "and %(num)d more: `/gpunode status` lists them all",
            summary.more_incidents,
        )
        blocks.append(context(more))
    blocks.append(divider())

    blocks.append(section("*" + t.gettext("Waiting for your approval") + "*"))
    if not summary.can_approve:
        blocks.append(context(t.gettext("No policy is loaded, so nobody can approve.")))
    elif not summary.approvals:
        blocks.append(context(t.gettext("Nothing is waiting for your approval.")))
    blocks += [_approval(a, now, t) for a in summary.approvals]
    if summary.more_approvals:
        more = t.ngettext(
            "and %(num)d more in the incident threads",
            "and %(num)d more in the incident threads",
            summary.more_approvals,
        )
        blocks.append(context(more))
    blocks.append(divider())

    blocks.append(section("*" + t.gettext("Recent diagnoses") + "*"))
    lines = [_diagnosis(d, now, t, locale) for d in summary.diagnoses]
    blocks.append(section("\n".join(lines)) if lines else context(t.gettext("None yet.")))
    blocks.append(context(t.gettext("Updated %(time)s UTC", time=t.datetime(now, fmt="HH:mm"))))
    return {"type": "home", "callback_id": CALLBACK_ID, "blocks": blocks[:VIEW_BLOCKS_MAX]}
