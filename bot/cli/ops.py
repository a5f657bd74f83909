"""``gpunode status | top | timeline | resolve`` in a terminal: the slash command's grammar.

The words after the verb go through ``bot.core.commands.parse`` exactly as Slack's text does,
so both surfaces accept the same input and print the same usage on a mistake. ``status``,
``timeline`` (the postmortem draft in Markdown) and ``resolve`` read the bot's store
(``store.path``); ``top`` asks the cluster, and ``resolve`` asks the incident's cluster to
remove the scale-down annotations tier 1 added (as Slack's resolve does).
"""

from __future__ import annotations

import argparse
import asyncio
import getpass
import sys
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime

from bot.cli.common import cli_settings, registry_from_args
from bot.config import Settings, load_settings
from bot.core import commands
from bot.core.clusters import format_node_ref
from bot.core.incidents import Incident
from bot.core.locales import choose_locale
from bot.render.cli_text import line
from bot.render.help import help_text
from bot.services.operations import IncidentOps, top_across
from bot.services.postmortem import UserName, export_postmortem
from bot.store.engines import require_existing
from bot.store.storing import Store


async def _as_is(user_id: str) -> str:
    return user_id


def _people(settings: Settings) -> tuple[UserName, Callable[[], Awaitable[None]]]:
    """Display names for the postmortem: Slack's ``users.info`` with the bot's token when the
    settings have one (an id that cannot be looked up stays an id), else the ids as they are.
    Also the close of the Slack client."""
    token = settings.slack.bot_token
    if token is None:

        async def nothing() -> None:
            return None

        return _as_is, nothing
    from bot.slack.chatting import SlackChat, make_client

    client = make_client(
        token.get_secret_value(), base_url=settings.slack.api_base_url, max_retries=0
    )

    async def close() -> None:
        session = getattr(client, "session", None)
        if session is not None:
            await session.close()

    return SlackChat(client).user_name, close


def cluster_label(settings: Settings, incident: Incident) -> str:
    """How the postmortem names the cluster: the incident's, else as the gateway names a
    single cluster (the kubeconfig context, else the API server URL)."""
    if incident.cluster:
        return incident.cluster
    kube = settings.kube
    return kube.context or kube.server or ("in-cluster" if kube.mode == "in_cluster" else "")


async def _incident_cmd(
    cmd: commands.Command,
    settings: Settings,
    *,
    show_cluster: bool = False,
    lang: str | None = None,
) -> str:
    locale = choose_locale(explicit=lang)
    path = require_existing(settings.store.target)
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
            # a terminal has no thread to hold charts; names come from Slack when it is set
            user_name, close = _people(settings)
            try:
                files = await export_postmortem(
                    store,
                    user_name,
                    incident,
                    cluster=cluster_label(settings, incident),
                    now=datetime.now(UTC),
                    charts=False,
                    locale=choose_locale(explicit=lang, thread=incident.locale),
                )
            finally:
                await close()
            return files.markdown
        assert isinstance(cmd, commands.Resolve)
        incident = await _resolve(store, settings, cmd)
        return line("resolved", incident.id, locale=locale)


async def _resolve(store: Store, settings: Settings, cmd: commands.Resolve) -> Incident:
    """Resolve as Slack does: with the settings' clusters, so the scale-down annotations
    tier 1 put on a node for the incident come off (``IncidentOps._release``; a cluster that
    cannot be reached is a timeline note, and the incident still resolves)."""
    from bot.kube.gateway import Gateway
    from bot.services.clusters import ClusterRegistry

    clusters = ClusterRegistry.from_settings(settings, build=Gateway.from_settings)
    try:
        ops = IncidentOps(
            store,
            clock=lambda: datetime.now(UTC),
            kube_for=lambda name: clusters.port(name or clusters.default),
        )
        incident: Incident = await ops.resolve(
            cmd.incident, by=f"cli:{getpass.getuser()}", note=cmd.note
        )
        return incident
    finally:
        clusters.close()


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
    lines.extend(["", line("top_legend", locale=locale)])
    return "\n".join(lines)


def main(args: argparse.Namespace) -> int:
    store_cmd = args.command in ("status", "timeline", "resolve")
    settings = (
        cli_settings(args)
        if store_cmd
        else load_settings(config_file=getattr(args, "config", None))
    )
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
            _incident_cmd(cmd, settings, show_cluster=len(settings.clusters) > 1, lang=lang)
        )
    sys.stdout.write(out.rstrip("\n") + "\n")
    return 0
