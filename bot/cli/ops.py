"""``gpunode status | top | timeline | resolve`` in a terminal: the slash command's grammar.

The words after the verb go through ``bot.core.commands.parse`` exactly as Slack's text does,
so both surfaces accept the same input and print the same usage on a mistake. ``status``,
``timeline`` (the postmortem draft in Markdown) and ``resolve`` read the bot's store
(``store.path``); ``top`` asks the cluster.
"""

from __future__ import annotations

import argparse
import asyncio
import getpass
import sys
from datetime import UTC, datetime

from bot.cli.common import registry_from_args
from bot.config import load_settings
from bot.core import commands
from bot.core.clusters import format_node_ref
from bot.render.cli_text import line
from bot.render.help import help_text
from bot.services.operations import IncidentOps, top_across
from bot.services.postmortem import export_postmortem
from bot.store.engines import require_existing
from bot.store.storing import Store


async def _as_is(user_id: str) -> str:
    return user_id


def _store_path(args: argparse.Namespace) -> str:
    return require_existing(load_settings(config_file=getattr(args, "config", None)).store.target)


async def _incident_cmd(cmd: commands.Command, path: str, *, show_cluster: bool = False) -> str:
    async with await Store.open(path) as store:
        ops = IncidentOps(store, clock=lambda: datetime.now(UTC))
        if isinstance(cmd, commands.Status):
            rows = await ops.status(cmd.node, cmd.cluster)
            if not rows:
                ref = format_node_ref(cmd.cluster or "", cmd.node or "")
                return "no open incidents" + (f" for {ref}" if cmd.node else "")
            return "\n".join(
                f"{i.id}  {format_node_ref(i.cluster, i.node, show_cluster=show_cluster):<24} "
                f"{i.state:<13} opened {i.opened_at:%Y-%m-%d %H:%M} UTC"
                for i in rows
            )
        if isinstance(cmd, commands.Timeline):
            incident = await ops.resolve_id(cmd.incident, channel="", thread_ts=None)
            # a terminal has no Slack to ask for names, and no thread to hold charts
            files = await export_postmortem(
                store, _as_is, incident, cluster="", now=datetime.now(UTC), charts=False
            )
            return files.markdown
        assert isinstance(cmd, commands.Resolve)
        incident = await ops.resolve(cmd.incident, by=f"cli:{getpass.getuser()}", note=cmd.note)
        return line("resolved", incident.id)


async def _top(args: argparse.Namespace, cluster: str | None = None) -> str:
    """GPU nodes of every cluster (or ``cluster``) ranked together; an unreachable cluster
    is named on a line of its own (on stderr's behalf: the rows still print)."""
    clusters = registry_from_args(args)
    try:
        report = await top_across(clusters, cluster=cluster)
    finally:
        clusters.close()
    asked = 1 if cluster else len(clusters.names)
    if report.errors and len(report.errors) == asked:
        raise report.errors[0]  # nothing answered: fail as a one-cluster top always did
    lines = [f"cluster {f.cluster} left out: {f.message}" for f in report.failures]
    if not report.rows:
        return "\n".join([*lines, "no GPU nodes found"])
    many = clusters.multi
    head = f"{'CLUSTER':<15}" if many else ""
    lines.append(f"{head}{'NODE':<28}{'PRESSURE':<10}{'USED%':>6}{'LIMITS%':>9}{'REQUESTS%':>11}")
    for r in report.rows:
        used = "-" if r.working_set_percent is None else str(r.working_set_percent)
        lim = "-" if r.limits_percent is None else str(r.limits_percent)
        req = "-" if r.requests_percent is None else str(r.requests_percent)
        where = f"{r.cluster:<15}" if many else ""
        lines.append(
            f"{where}{r.node:<28}{'yes' if r.memory_pressure else 'no':<10}{used:>6}"
            f"{lim:>9}{req:>11}"
        )
    return "\n".join(lines)


def main(args: argparse.Namespace) -> int:
    settings = load_settings(config_file=getattr(args, "config", None))
    cmd = commands.parse(
        " ".join([args.command, *args.words]), prog="gpunode", clusters=tuple(settings.clusters)
    )
    if isinstance(cmd, commands.Help):
        out = help_text(cmd.topic, prog="gpunode")
    elif isinstance(cmd, commands.Top):
        out = asyncio.run(_top(args, cmd.cluster))
    else:
        out = asyncio.run(
            _incident_cmd(cmd, _store_path(args), show_cluster=len(settings.clusters) > 1)
        )
    sys.stdout.write(out.rstrip("\n") + "\n")
    return 0
