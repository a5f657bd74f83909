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
from bot.core.locales import choose_locale
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


async def _incident_cmd(
    cmd: commands.Command, path: str, *, show_cluster: bool = False, lang: str | None = None
) -> str:
    locale = choose_locale(explicit=lang)
    async with await Store.open(path) as store:
        ops = IncidentOps(store, clock=lambda: datetime.now(UTC))
        if isinstance(cmd, commands.Status):
            rows = await ops.status(cmd.node, cmd.cluster)
            if not rows:
                ref = format_node_ref(cmd.cluster or "", cmd.node or "") if cmd.node else None
                return line("no_open_incidents", ref, locale=locale)
            shown = [
                i.model_copy(
                    update={"node": format_node_ref(i.cluster, i.node, show_cluster=show_cluster)}
                )
                for i in rows
            ]
            return "\n".join(line("status_line", i, locale=locale) for i in shown)
        if isinstance(cmd, commands.Timeline):
            incident = await ops.resolve_id(cmd.incident, channel="", thread_ts=None)
            # a terminal has no Slack to ask for names, and no thread to hold charts
            files = await export_postmortem(
                store, _as_is, incident, cluster="", now=datetime.now(UTC), charts=False,
                locale=choose_locale(explicit=lang, thread=incident.locale),
            )  # fmt: skip
            return files.markdown
        assert isinstance(cmd, commands.Resolve)
        incident = await ops.resolve(cmd.incident, by=f"cli:{getpass.getuser()}", note=cmd.note)
        return line("resolved", incident.id, locale=locale)


async def _top(args: argparse.Namespace, cluster: str | None = None, *, locale: str = "en") -> str:
    """GPU nodes of every cluster (or ``cluster``) ranked together; an unreachable cluster
    is named on a line of its own (the rows of the others still print)."""
    clusters = registry_from_args(args)
    try:
        report = await top_across(clusters, cluster=cluster)
    finally:
        clusters.close()
    asked = 1 if cluster else len(clusters.names)
    if report.errors and len(report.errors) == asked:
        raise report.errors[0]  # nothing answered: fail as a one-cluster top always did
    lines = [line("cluster_left_out", f.cluster, f.message, locale=locale) for f in report.failures]
    if not report.rows:
        return "\n".join([*lines, line("no_gpu_nodes", locale=locale)])
    many = clusters.multi
    lines.append(line("top_header", many, locale=locale))
    for r in report.rows:
        used = "-" if r.working_set_percent is None else str(r.working_set_percent)
        lim = "-" if r.limits_percent is None else str(r.limits_percent)
        req = "-" if r.requests_percent is None else str(r.requests_percent)
        lines.append(line("top_line", r, used, lim, req, many, locale=locale))
    return "\n".join(lines)


def main(args: argparse.Namespace) -> int:
    settings = load_settings(config_file=getattr(args, "config", None))
    cmd = commands.parse(
        " ".join([args.command, *args.words]), prog="gpunode", clusters=tuple(settings.clusters)
    )
    lang = getattr(args, "lang", None)
    if isinstance(cmd, commands.Help):
        out = help_text(cmd.topic, prog="gpunode", locale=choose_locale(explicit=lang))
    elif isinstance(cmd, commands.Top):
        out = asyncio.run(_top(args, cmd.cluster, locale=choose_locale(explicit=lang)))
    else:
        out = asyncio.run(
            _incident_cmd(
                cmd, _store_path(args), show_cluster=len(settings.clusters) > 1, lang=lang
            )
        )
    sys.stdout.write(out.rstrip("\n") + "\n")
    return 0
