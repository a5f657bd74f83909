"""The terminal's presenter: a command's typed outcome (``bot.core.reporting.outcomes``) as the
lines ``gpunode status|top|timeline|resolve|help`` print, in the reader's language, as
``bot.slack.presenter`` and ``bot.slack.app.as_told`` present the same outcomes in Slack.

``present`` returns what goes to stdout, what goes to stderr, and the exit status: a
refusal, or a ``top`` that no cluster answered, is an error (exit 1) said on stderr.
"""

from __future__ import annotations

from dataclasses import dataclass

from bot.core.reporting.outcomes import (
    Exported,
    HelpAsked,
    Outcome,
    Posted,
    Refused,
    Resolved,
    StatusList,
    TopNodes,
)
from bot.render.cli_text import line
from bot.render.help import help_text
from bot.render.messages import plain_fallback
from bot.render.notices import told_mrkdwn


@dataclass(frozen=True)
class Printed:
    """What the terminal shows for one outcome."""

    out: str = ""
    err: str = ""
    status: int = 0


def _percent(value: int | None) -> str:
    return "-" if value is None else str(value)


def _status(outcome: StatusList, locale: str) -> str:
    if not outcome.incidents:
        return line("no_open_incidents", outcome.asked, locale=locale)
    rows = [
        {
            "id": i.id,
            "node": i.at.label(show_cluster=outcome.show_cluster),
            "state": i.state,
            "opened_at": i.opened_at,
        }
        for i in outcome.incidents
    ]
    return "\n".join(line("status_line", row, locale=locale) for row in rows)


def _top(outcome: TopNodes, locale: str) -> Printed:
    if outcome.nothing_answered:
        # nothing answered: fail, naming why, as a one-cluster top always did
        return Printed(err=f"gpunode: {outcome.failures[0].message}", status=1)
    lines = [
        line("cluster_left_out", f.cluster, f.message, locale=locale) for f in outcome.failures
    ]
    if not outcome.rows:
        return Printed(out="\n".join([*lines, line("no_gpu_nodes", locale=locale)]))
    many = outcome.show_cluster
    lines.append(line("top_header", many, locale=locale))
    for r in outcome.rows:
        row = {"cluster": r.at.cluster, "node": r.at.node, "memory_pressure": r.memory_pressure}
        used, lim, req = (
            _percent(r.working_set_percent),
            _percent(r.limits_percent),
            _percent(r.requests_percent),
        )
        lines.append(line("top_line", row, used, lim, req, many, locale=locale))
    lines.extend(["", line("top_legend", locale=locale)])
    return Printed(out="\n".join(lines))


def present(outcome: Outcome, *, locale: str, prog: str = "gpunode") -> Printed:
    """``outcome`` as the terminal prints it, in ``locale``."""
    if isinstance(outcome, Refused):
        return Printed(err=f"gpunode: {plain_fallback(told_mrkdwn(outcome, locale))}", status=1)
    if isinstance(outcome, HelpAsked):
        return Printed(out=help_text(outcome.topic, prog=prog, locale=locale))
    if isinstance(outcome, StatusList):
        return Printed(out=_status(outcome, locale))
    if isinstance(outcome, TopNodes):
        return _top(outcome, locale)
    if isinstance(outcome, Resolved):
        return Printed(out=line("resolved", outcome.incident_id, locale=locale))
    if isinstance(outcome, Exported):
        return Printed(out=outcome.markdown)
    assert isinstance(outcome, Posted)
    return Printed()
