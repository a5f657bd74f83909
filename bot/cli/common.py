"""What every cluster-facing CLI command shares: settings plus command-line overrides."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from bot.config import KubeSettings, load_settings

if TYPE_CHECKING:
    from bot.kube.gateway import Gateway


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
