"""What every cluster-facing CLI command shares: settings plus command-line overrides."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from bot.config import KubeSettings, load_settings

if TYPE_CHECKING:
    from bot.kube.gateway import Gateway
    from bot.services.clusters import ClusterRegistry


def cluster_settings(args: argparse.Namespace) -> KubeSettings:
    """``kube`` settings, with ``--kubeconfig/--context`` or ``--server`` (and ``--token``)
    taking precedence."""
    kube = load_settings(config_file=getattr(args, "config", None)).kube
    overrides: dict[str, Any] = {}
    if getattr(args, "kubeconfig", None) or getattr(args, "context", None):
        overrides.update(mode="kubeconfig", kubeconfig=args.kubeconfig, context=args.context)
    if getattr(args, "server", None):
        overrides.update(mode="server", server=args.server)
        if getattr(args, "token", None):
            overrides.update(token=args.token)
    return KubeSettings.model_validate({**kube.model_dump(), **overrides}) if overrides else kube


def gateway_from_args(args: argparse.Namespace) -> Gateway:
    """The gateway for a CLI command (imported lazily: ``collect`` never loads the client)."""
    from bot.kube.gateway import Gateway

    return Gateway.from_settings(cluster_settings(args))


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


def node_target(args: argparse.Namespace, ref: str, *, verb: str) -> tuple[Any, str, str]:
    """``[CLUSTER/]NODE`` as the slash command reads it -> (that cluster's gateway, its
    name, the node). The cluster defaults to the settings' default cluster; UsageError
    (naming the known clusters) for one that is not listed."""
    from bot.core.commands import parse_node_ref

    registry = registry_from_args(args)
    cluster, node = parse_node_ref(ref, verb=verb, prog="gpunode", clusters=registry.names)
    if cluster is not None and _overridden(args) and len(registry.names) == 1:
        cluster = None  # the command line names the connection; the prefix only labels it
    name = registry.choose(cluster)
    return registry.port(name), name, node
