"""Cluster names and ``[CLUSTER/]NODE`` references (pure: no I/O).

One gpunode serves several clusters. A command names a node as ``NODE`` (the channel's
default cluster, else the settings' default) or ``CLUSTER/NODE``. Cluster names are
DNS-1123 labels (what a kubeconfig context or a Prometheus ``cluster`` label usually is,
and safe in Slack text, file names and metric labels); node names are DNS-1123 subdomains,
as Kubernetes requires. ``choose_cluster`` decides which cluster a command acts on and names
the known clusters when asked for one that does not exist.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping

from pydantic import BaseModel, ConfigDict, field_validator

from bot.errors import UnknownClusterError

#: Kubernetes' DNS-1123 label: what `kubectl config rename-context` accepts for a portable name
MAX_CLUSTER_NAME = 63
_DNS1123_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
#: the name of the one cluster of a settings file that lists none (today's single cluster)
DEFAULT_CLUSTER = "default"


def cluster_name_problem(name: str) -> str | None:
    """Why ``name`` cannot be a cluster name, or None when it can."""
    found = cluster_name_issue(name)
    return None if found is None else found[1]


def cluster_name_issue(name: str) -> tuple[str, str, dict[str, object]] | None:
    """Why ``name`` cannot be a cluster name as (error key, English text, the key's params),
    or None when it can (``bot.errors.GpunodeError.key``: a presenter words it)."""
    if not name:
        return "cluster_name_empty", "a cluster name cannot be empty", {}
    if len(name) > MAX_CLUSTER_NAME:
        text = f"cluster name is {len(name)} characters; the limit is {MAX_CLUSTER_NAME}"
        return "cluster_name_too_long", text, {"length": len(name), "limit": MAX_CLUSTER_NAME}
    if _DNS1123_LABEL.fullmatch(name):
        return None
    if _DNS1123_LABEL.fullmatch(name.lower()):
        text = f"cluster names are lowercase: did you mean {name.lower()}?"
        return "cluster_name_case", text, {"suggestion": name.lower()}
    shown = name if len(name) <= 60 else name[:57] + "..."
    text = (
        f"{shown!r} is not a valid cluster name: use lowercase letters, digits and '-', "
        "starting and ending with a letter or digit (no '.' or '/')"
    )
    return "cluster_name_invalid", text, {"name": shown}


def split_node_ref(word: str) -> tuple[str | None, str]:
    """``prod-eu/gpu-node-01`` -> ``("prod-eu", "gpu-node-01")``; ``gpu-node-01`` ->
    ``(None, "gpu-node-01")``. Only the first '/' splits (node names never hold one, so a
    second '/' is left in the node part for its validation to refuse)."""
    if "/" not in word:
        return None, word
    cluster, _, node = word.partition("/")
    return cluster, node


def format_node_ref(cluster: str, node: str, *, show_cluster: bool = True) -> str:
    """The inverse of ``split_node_ref``; ``show_cluster=False`` for a one-cluster bot."""
    return f"{cluster}/{node}" if show_cluster and cluster else node


class NodeRef(BaseModel):
    """One node in one cluster: the only way the command paths say which node they mean.

    Both parts are always set: a command that names no cluster is given one (the channel's,
    else the default) before it becomes a ``NodeRef``. ``str()`` is ``cluster/node``;
    ``label`` drops the cluster for a one-cluster bot."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    cluster: str
    node: str

    @field_validator("cluster")
    @classmethod
    def _a_cluster_name(cls, value: str) -> str:
        problem = cluster_name_problem(value)
        if problem is not None:
            raise ValueError(problem)
        return value

    @field_validator("node")
    @classmethod
    def _a_node(cls, value: str) -> str:
        if not value or "/" in value:
            raise ValueError(f"{value!r} is not a node name; write CLUSTER/NODE as two parts")
        return value

    def label(self, *, show_cluster: bool = True) -> str:
        """``cluster/node``, or the node alone when ``show_cluster`` is False."""
        return format_node_ref(self.cluster, self.node, show_cluster=show_cluster)

    def __str__(self) -> str:
        return self.label()


def choose_cluster(
    explicit: str | None,
    *,
    channel: str = "",
    known: Collection[str],
    default: str,
    channel_defaults: Mapping[str, str] | None = None,
) -> str:
    """The cluster a command acts on: the one it names, else its channel's default, else the
    settings' default. UnknownClusterError (naming the known clusters) for any other name."""
    name = explicit or (channel_defaults or {}).get(channel) or default
    if name not in known:
        raise UnknownClusterError(name, tuple(sorted(known)))
    return name
