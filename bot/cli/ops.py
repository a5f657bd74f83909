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

from bot.cli.common import gateway_from_args
from bot.config import load_settings
from bot.core import commands
from bot.core.locales import choose_locale
from bot.render.cli_text import line
from bot.render.help import help_text
from bot.services.operations import IncidentOps, top_nodes
from bot.services.postmortem import export_postmortem
from bot.store.engines import require_existing
from bot.store.storing import Store


async def _as_is(user_id: str) -> str:
    return user_id


def _store_path(args: argparse.Namespace) -> str:
    return require_existing(load_settings(config_file=getattr(args, "config", None)).store.target)


async def _incident_cmd(cmd: commands.Command, path: str, *, lang: str | None = None) -> str:
    locale = choose_locale(explicit=lang)
    async with await Store.open(path) as store:
        ops = IncidentOps(store, clock=lambda: datetime.now(UTC))
        if isinstance(cmd, commands.Status):
            rows = await ops.status(cmd.node)
            if not rows:
                return line("no_open_incidents", cmd.node, locale=locale)
            return "\n".join(line("status_line", i, locale=locale) for i in rows)
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


async def _top(args: argparse.Namespace, *, locale: str = "en") -> str:
    kube = gateway_from_args(args)
    try:
        ranks = await top_nodes(kube)
    finally:
        kube.close()
    if not ranks:
        return line("no_gpu_nodes", locale=locale)
    lines = [line("top_header", locale=locale)]
    for r in ranks:
        used = "-" if r.working_set_percent is None else str(r.working_set_percent)
        lim = "-" if r.limits_percent is None else str(r.limits_percent)
        req = "-" if r.requests_percent is None else str(r.requests_percent)
        lines.append(line("top_line", r, used, lim, req, locale=locale))
    return "\n".join(lines)


def main(args: argparse.Namespace) -> int:
    cmd = commands.parse(" ".join([args.command, *args.words]), prog="gpunode")
    lang = getattr(args, "lang", None)
    if isinstance(cmd, commands.Help):
        out = help_text(cmd.topic, prog="gpunode", locale=choose_locale(explicit=lang))
    elif isinstance(cmd, commands.Top):
        out = asyncio.run(_top(args, locale=choose_locale(explicit=lang)))
    else:
        out = asyncio.run(_incident_cmd(cmd, _store_path(args), lang=lang))
    sys.stdout.write(out.rstrip("\n") + "\n")
    return 0
