"""What every cluster-facing CLI command shares: settings plus command-line overrides."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bot.config import KubeSettings, Settings, load_settings
from bot.errors import UsageError

if TYPE_CHECKING:
    from bot.core.governance.commands import Command
    from bot.services.clusters import ClusterRegistry


def cluster_settings(args: argparse.Namespace) -> KubeSettings:
    """``kube`` settings, with ``--kubeconfig/--context`` or ``--server`` (and ``--token``)
    taking precedence."""
    kube = load_settings(config_file=getattr(args, "config", None)).kube
    overrides: dict[str, Any] = {}
    if getattr(args, "kubeconfig", None) or getattr(args, "context", None):
        overrides.update(mode="kubeconfig", kubeconfig=args.kubeconfig, context=args.context)
    if getattr(args, "server", None):
        from bot.kube.connecting import server_url_cause, server_url_problem

        if problem := server_url_problem(args.server):
            cause, detail = server_url_cause(args.server) or ("", "")
            raise UsageError(
                f"--server {problem}.",
                key="server_url_bad",
                params={"url": args.server, "cause": cause, "detail": detail},
            )
        overrides.update(mode="server", server=args.server)
        if getattr(args, "token", None):
            overrides.update(token=args.token)
    return KubeSettings.model_validate({**kube.model_dump(), **overrides}) if overrides else kube


def cli_settings(args: argparse.Namespace) -> Settings:
    """The settings a store-reading command uses: ``--config`` (or ``GPUNODE_CONFIG``) and
    the environment. With neither a config file nor a store configured, and no store at the
    default path, the running (or last) demo's settings when there are some (``gpunode demo``
    writes them beside its store), said on stderr: ``make demo`` then ``gpunode status``
    just works."""
    import os
    import sys

    from bot.config import StoreSettings
    from bot.store.engines import demo_settings_path

    config = getattr(args, "config", None) or os.environ.get("GPUNODE_CONFIG")
    settings = load_settings(config_file=config)
    default = StoreSettings.model_fields["path"].default
    demo = demo_settings_path()
    unset = settings.store.dsn is None and settings.store.path == default
    if config or not unset or Path(default).exists() or not demo.exists():
        return settings
    demo_settings = load_settings(config_file=demo)
    from bot.core.model.locales import choose_locale
    from bot.render.cli_text import line

    locale = choose_locale(explicit=getattr(args, "lang", None))
    print(line("reading_demo_store", demo_settings.store.path, locale=locale), file=sys.stderr)
    return demo_settings


def store_target(args: argparse.Namespace) -> str:
    """The store the CLI reads (``cli_settings``): ``store.dsn``, else ``store.path``;
    ``StoreError`` saying which setting names the store when that file does not exist."""
    from bot.store.engines import require_existing

    return require_existing(cli_settings(args).store.target)


def _overridden(args: argparse.Namespace) -> bool:
    return any(getattr(args, k, None) for k in ("kubeconfig", "context", "server"))


def registry_from_args(args: argparse.Namespace) -> ClusterRegistry:
    """The clusters a CLI command may name: the settings' ``clusters`` (built on first use),
    or the one cluster that ``--kubeconfig/--context`` or ``--server`` point at."""
    from bot.kube.gateway import Gateway
    from bot.services.clusters import ClusterRegistry

    if _overridden(args):
        return ClusterRegistry.single(Gateway.from_settings(cluster_settings(args)))
    settings = load_settings(config_file=getattr(args, "config", None))
    return ClusterRegistry.from_settings(settings, build=Gateway.from_settings)


def node_command(args: argparse.Namespace, verb: str) -> tuple[Command, ClusterRegistry]:
    """``gpunode VERB [CLUSTER/]NODE`` read as the slash command reads it, and the clusters
    it may name (closed by whoever handles the command). The cluster defaults to the
    settings' default cluster; UsageError (naming the known clusters) for one that is not
    listed."""
    from bot.core.governance import commands

    words = f"{verb} {args.node}"
    commands.parse(words, prog="gpunode")  # a bad node name is a usage error before anything
    registry = registry_from_args(args)
    cmd = commands.parse(words, prog="gpunode", clusters=registry.names)
    if _overridden(args) and len(registry.names) == 1 and getattr(cmd, "cluster", None):
        # the command line names the connection; the prefix only labels it
        cmd = cmd.model_copy(update={"cluster": None})
    return cmd, registry
