"""``gpunode status | top | timeline | resolve | help`` in a terminal: the slash command's
grammar and its command table.

The words after the verb go through ``bot.core.governance.commands.parse`` exactly as Slack's text
does, so both surfaces accept the same input and print the same usage on a mistake; then
``bot.services.commands.handle`` carries the command out and ``bot.cli.presenter`` prints its
outcome. ``status``, ``timeline`` (the postmortem draft in Markdown) and ``resolve`` read the
bot's store (``store.path``); ``top`` asks the clusters, and ``resolve`` asks the incident's
cluster to remove the scale-down annotations tier 1 added (as Slack's resolve does).
"""

from __future__ import annotations

import argparse
import asyncio
import getpass
import sys
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime

from bot.cli.common import cli_settings, registry_from_args
from bot.cli.presenter import present
from bot.config import Settings, load_settings
from bot.core.governance import commands
from bot.core.governance.policy import Permission
from bot.core.model.clusters import NodeRef
from bot.core.model.incidents import Incident
from bot.core.model.locales import choose_locale
from bot.core.reporting.outcomes import Exported, Outcome, Refused, Resolved
from bot.errors import UsageError
from bot.kube.gateway import Gateway
from bot.render.postmortem import render_postmortem_markdown
from bot.services.clusters import ClusterRegistry
from bot.services.commands import Asker, handle
from bot.services.operations import IncidentOps
from bot.services.postmortem import UserName, draft_postmortem
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


@dataclass(frozen=True)
class TerminalSurface:
    """The ``CommandSurface`` of a terminal. Whoever runs ``gpunode`` holds the store and
    the kubeconfig, so the chat role policy does not apply (nothing is refused). A
    postmortem is printed as Markdown; a resolution is said on stdout only."""

    ops: IncidentOps
    clusters: ClusterRegistry
    settings: Settings
    store: Store
    lang: str | None

    async def refusal(
        self, permission: Permission, asker: Asker, cluster: str | None
    ) -> Refused | None:
        return None

    async def diagnose(self, at: NodeRef, asker: Asker) -> Outcome:
        raise UsageError(
            "in a terminal, diagnose is its own command", usage=f"gpunode diagnose {at}"
        )

    async def prevent(self, at: NodeRef, asker: Asker) -> Outcome:
        raise UsageError("in a terminal, prevent is its own command", usage=f"gpunode prevent {at}")

    async def timeline(self, incident: Incident, asker: Asker) -> Outcome:
        # a terminal has no thread to hold charts; names come from Slack when it is set
        user_name, close = _people(self.settings)
        try:
            draft = await draft_postmortem(
                self.store,
                user_name,
                incident,
                cluster=cluster_label(self.settings, incident),
                now=datetime.now(UTC),
            )
        finally:
            await close()
        locale = choose_locale(explicit=self.lang, thread=incident.locale)
        markdown = render_postmortem_markdown(draft.postmortem, charts={}, locale=locale)
        return Exported(incident_id=incident.id, markdown=markdown)

    async def resolved(self, incident: Incident, asker: Asker, note: str) -> Outcome:
        return Resolved(incident_id=incident.id, by=asker.user, note=note)


async def _answer(
    cmd: commands.Command, args: argparse.Namespace, settings: Settings, *, store_cmd: bool
) -> Outcome:
    """``handle`` with the terminal's surface: the store opened for the commands that read
    it; ``top`` asks the clusters (``--server``/``--kubeconfig`` or the settings')."""
    asker = Asker(user=f"cli:{getpass.getuser()}")
    lang = getattr(args, "lang", None)
    if store_cmd:
        clusters = ClusterRegistry.from_settings(settings, build=Gateway.from_settings)
    else:
        clusters = registry_from_args(args)
    try:
        if not store_cmd:
            return await handle(cmd, asker, _Storeless(clusters))
        path = require_existing(settings.store.target)
        async with await Store.open(path) as store:
            # resolve as Slack does: the scale-down annotations tier 1 put on the node come
            # off (IncidentOps._release; an unreachable cluster is a timeline note)
            ops = IncidentOps(
                store,
                clock=lambda: datetime.now(UTC),
                kube_for=lambda name: clusters.port(name or clusters.default),
            )
            surface = TerminalSurface(ops, clusters, settings, store, lang)
            return await handle(cmd, asker, surface)
    finally:
        clusters.close()


@dataclass(frozen=True)
class _Storeless:
    """The terminal's surface for ``top`` and ``help``, which read no store."""

    clusters: ClusterRegistry

    @property
    def ops(self) -> IncidentOps:
        raise AssertionError("top and help read no incidents")

    async def refusal(
        self, permission: Permission, asker: Asker, cluster: str | None
    ) -> Refused | None:
        return None

    async def diagnose(self, at: NodeRef, asker: Asker) -> Outcome:
        raise AssertionError("diagnose is its own subcommand")

    async def prevent(self, at: NodeRef, asker: Asker) -> Outcome:
        raise AssertionError("prevent is its own subcommand")

    async def timeline(self, incident: Incident, asker: Asker) -> Outcome:
        raise AssertionError("timeline reads the store")

    async def resolved(self, incident: Incident, asker: Asker, note: str) -> Outcome:
        raise AssertionError("resolve reads the store")


def main(args: argparse.Namespace) -> int:
    """Parse the words as the slash command does, ``handle`` them, print the outcome."""
    store_cmd = args.command in ("status", "timeline", "resolve")
    settings = (
        cli_settings(args)
        if store_cmd
        else load_settings(config_file=getattr(args, "config", None))
    )
    cmd = commands.parse(
        " ".join([args.command, *args.words]), prog="gpunode", clusters=tuple(settings.clusters)
    )
    outcome = asyncio.run(_answer(cmd, args, settings, store_cmd=store_cmd))
    printed = present(outcome, locale=choose_locale(explicit=getattr(args, "lang", None)))
    if printed.out:
        sys.stdout.write(printed.out.rstrip("\n") + "\n")
    if printed.err:
        sys.stderr.write(printed.err.rstrip("\n") + "\n")
    return printed.status
