"""``gpunode diagnose | prevent | status | top | timeline | resolve | help`` in a terminal:
the slash command's grammar and its command table.

The words after the verb go through ``bot.core.governance.commands.parse`` exactly as Slack's text
does, so both surfaces accept the same input and print the same usage on a mistake; then
``bot.services.commands.handle`` carries the command out and ``bot.cli.presenter`` prints its
outcome. ``status``, ``timeline`` (the postmortem draft in Markdown) and ``resolve`` read the
bot's store (``store.path``); ``diagnose``, ``prevent`` and ``top`` ask the clusters (no
incident, no thread: the node as the cluster shows it now), and ``resolve`` asks the
incident's cluster to remove the scale-down annotations tier 1 added (as Slack's resolve
does). ``gpunode diagnose`` and ``gpunode prevent`` keep their own subcommands for their
options (``bot.cli.diagnose``, ``bot.cli.prevent``) and go through ``answer`` here.
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
from bot.core.reporting.outcomes import (
    Exported,
    KitMade,
    NodeDiagnosed,
    Outcome,
    Refused,
    Resolved,
)
from bot.kube.gateway import Gateway
from bot.render.postmortem import render_postmortem_markdown
from bot.services.clusters import ClusterRegistry
from bot.services.commands import Asker, handle
from bot.services.operations import IncidentOps
from bot.services.postmortem import UserName, draft_postmortem
from bot.services.prevention import kit_from_cluster
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


async def _diagnosed(clusters: ClusterRegistry, settings: Settings, at: NodeRef) -> Outcome:
    """The diagnose use case Slack runs (``bot.services.diagnosing``: the node, the
    diagnostic Job with the Prometheus history alongside, one cluster view, the analysis),
    with no incident or thread; the wall clock is "now"."""
    from bot.config.thresholds import read_thresholds
    from bot.prom.history import HistoryService
    from bot.services.diagnosing import check_node, run_diagnosis

    kube = clusters.port(at.cluster)
    now = datetime.now(UTC)
    history = HistoryService.from_settings(settings.prometheus)
    try:
        known = await check_node(kube, at.node)
        done = await run_diagnosis(
            kube, known, thresholds=read_thresholds(settings), clock=lambda: now, history=history
        )
    finally:
        await history.close()
    return NodeDiagnosed(at=at, diagnosis=done.diagnosis, bundle=done.bundle)


async def _kit(clusters: ClusterRegistry, at: NodeRef) -> Outcome:
    """The node's prevention kit as its cluster shows it now."""
    kit = await kit_from_cluster(clusters.port(at.cluster), at.node, at=datetime.now(UTC))
    return KitMade(at=at, params=kit.params, source=kit.source)


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
        return await _diagnosed(self.clusters, self.settings, at)

    async def prevent(self, at: NodeRef, asker: Asker) -> Outcome:
        return await _kit(self.clusters, at)

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


async def answer(
    cmd: commands.Command,
    args: argparse.Namespace,
    settings: Settings,
    *,
    store_cmd: bool,
    clusters: ClusterRegistry | None = None,
) -> Outcome:
    """``handle`` with the terminal's surface: the store opened for the commands that read
    it; ``diagnose``, ``prevent`` and ``top`` ask ``clusters`` (closed here; by default the
    ones ``--server``/``--kubeconfig`` or the settings name)."""
    asker = Asker(user=f"cli:{getpass.getuser()}")
    lang = getattr(args, "lang", None)
    if clusters is None:
        clusters = (
            ClusterRegistry.from_settings(settings, build=Gateway.from_settings)
            if store_cmd
            else registry_from_args(args)
        )
    try:
        if not store_cmd:
            return await handle(cmd, asker, LiveSurface(clusters, settings))
        path = require_existing(settings.store.target)
        async with await Store.open(path) as store:
            # resolve as Slack does: the scale-down annotations tier 1 put on the node come
            # off (IncidentOps._release; an unreachable cluster is a timeline note)
            ops = IncidentOps(
                store,
                clock=lambda: datetime.now(UTC),
                clusters=clusters,
            )
            surface = TerminalSurface(ops, clusters, settings, store, lang)
            return await handle(cmd, asker, surface)
    finally:
        clusters.close()


@dataclass(frozen=True)
class LiveSurface:
    """The terminal's surface for ``diagnose``, ``prevent``, ``top`` and ``help``, which
    read no store."""

    clusters: ClusterRegistry
    settings: Settings

    @property
    def ops(self) -> IncidentOps:
        raise AssertionError("diagnose, prevent, top and help read no incidents")

    async def refusal(
        self, permission: Permission, asker: Asker, cluster: str | None
    ) -> Refused | None:
        return None

    async def diagnose(self, at: NodeRef, asker: Asker) -> Outcome:
        return await _diagnosed(self.clusters, self.settings, at)

    async def prevent(self, at: NodeRef, asker: Asker) -> Outcome:
        return await _kit(self.clusters, at)

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
    outcome = asyncio.run(answer(cmd, args, settings, store_cmd=store_cmd))
    printed = present(outcome, locale=choose_locale(explicit=getattr(args, "lang", None)))
    if printed.out:
        sys.stdout.write(printed.out.rstrip("\n") + "\n")
    if printed.err:
        sys.stderr.write(printed.err.rstrip("\n") + "\n")
    return printed.status
