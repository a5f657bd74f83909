"""The command grammar shared by the slash command and the CLI (pure).

``/gpunode diagnose gpu-node-01`` in Slack and ``gpunode diagnose gpu-node-01`` in a terminal
go through the same ``parse``, so both accept exactly the same words and show the same help.
``parse`` raises only ``UsageError`` (whose ``usage`` holds the usage line to show back),
whatever text it is given; a property test holds it to that.

A node is named ``[CLUSTER/]NODE`` everywhere (``diagnose prod-eu/gpu-node-01``); without a
cluster the command's ``cluster`` is None and the caller picks the channel's or the default
cluster (``bot.core.model.clusters.choose_cluster``). Given the known cluster names, ``parse``
refuses an unknown one at once, naming the known ones.
"""

from __future__ import annotations

import re
from collections.abc import Collection
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

from bot.core.model.clusters import NodeRef, cluster_name_issue, split_node_ref
from bot.core.model.incidents import format_incident_id, parse_incident_number
from bot.errors import UsageError

DEFAULT_PROG = "/gpunode"
_MAX_NODE_NAME = 253  # RFC 1123 subdomain limit, as Kubernetes enforces for node names
_MENTION = re.compile(r"<@[A-Z0-9]+(\|[^>]*)?>")
_DNS1123_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")


class _Command(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Diagnose(_Command):
    verb: Literal["diagnose"] = "diagnose"
    node: str
    cluster: str | None = Field(None, description="named as CLUSTER/NODE; None: the default")


class Prevent(_Command):
    verb: Literal["prevent"] = "prevent"
    node: str
    cluster: str | None = Field(None, description="named as CLUSTER/NODE; None: the default")


class Status(_Command):
    verb: Literal["status"] = "status"
    node: str | None = None
    cluster: str | None = Field(None, description="named as CLUSTER/NODE; None: any")


class Top(_Command):
    verb: Literal["top"] = "top"
    cluster: str | None = Field(None, description="rank one cluster's nodes; None: every one")


class Timeline(_Command):
    verb: Literal["timeline"] = "timeline"
    incident: str | None = Field(None, description="INC-0007; None = the thread's incident")


class Resolve(_Command):
    verb: Literal["resolve"] = "resolve"
    incident: str
    note: str = ""


class Help(_Command):
    verb: Literal["help"] = "help"
    topic: str | None = Field(None, description="a verb to explain, or None for all")


Command = Annotated[
    Diagnose | Prevent | Status | Top | Timeline | Resolve | Help, Field(discriminator="verb")
]

# verb -> (arguments, one-line description). The grammar's own documentation.
_VERBS: dict[str, tuple[str, str]] = {
    "diagnose": (
        "[CLUSTER/]NODE",
        "collect memory and GPU evidence on NODE and open or join its incident",
    ),
    "prevent": (
        "[CLUSTER/]NODE",
        "the prevention kit for NODE (quota, limits, kubelet, descheduler, alerts) with the "
        "evidence behind every value",
    ),
    "status": ("[[CLUSTER/]NODE]", "list open incidents, or the open incident of NODE"),
    "top": ("[CLUSTER]", "rank GPU nodes by memory pressure across clusters (or in CLUSTER)"),
    "timeline": (
        "[INCIDENT]",
        "export an incident's postmortem draft with its timeline (default: this thread's)",
    ),
    "resolve": ("INCIDENT [NOTE...]", "resolve an incident, with an optional closing note"),
    "help": ("[COMMAND]", "show this help, or the help of one command"),
}
VERBS: tuple[str, ...] = tuple(_VERBS)

_ARG_HELP = (
    "NODE is a Kubernetes node name (lowercase letters, digits, '-' and '.'); "
    "CLUSTER/NODE names its cluster (e.g. prod-eu/gpu-node-01), otherwise the channel's "
    "default cluster is used. INCIDENT is an incident id such as INC-0007 (or just 7)."
)


def usage(verb: str, *, prog: str = DEFAULT_PROG) -> str:
    """The usage line of ``verb``, e.g. ``/gpunode diagnose [CLUSTER/]NODE``."""
    args, _ = _VERBS[verb]
    return f"{prog} {verb} {args}".rstrip()


def usage_lines(*, prog: str = DEFAULT_PROG) -> str:
    """Every verb's usage line, one a line (no prose: shown back after a usage error)."""
    return "\n".join(usage(v, prog=prog) for v in VERBS)


def help_text(verb: str | None = None, *, prog: str = DEFAULT_PROG) -> str:
    """All commands with one line each, or one command's usage and description."""
    if verb is not None:
        _, description = _VERBS[verb]
        return f"{usage(verb, prog=prog)}\n  {description}\n{_ARG_HELP}"
    width = max(len(usage(v, prog=prog)) for v in VERBS)
    lines = [f"{usage(v, prog=prog):<{width}}  {_VERBS[v][1]}" for v in VERBS]
    return "\n".join(["Commands:", *lines, _ARG_HELP])


def _distance(a: str, b: str) -> int:
    """Levenshtein edit distance (the core may not import difflib's neighbours; this is tiny)."""
    previous = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        current = [i]
        for j, cb in enumerate(b, 1):
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (ca != cb)))
        previous = current
    return previous[-1]


def closest_verb(word: str) -> str | None:
    """The verb a typo most likely meant, or None when nothing is close."""
    word = word.lower()[:40]
    prefixed = [v for v in VERBS if len(word) >= 2 and v.startswith(word)]
    if len(prefixed) == 1:
        return prefixed[0]
    best = min(VERBS, key=lambda v: (_distance(word, v), v))
    return best if _distance(word, best) <= max(1, len(best) // 3) else None


def _shown(word: str) -> str:
    return word if len(word) <= 60 else word[:57] + "..."


def parse_node_name(word: str, *, verb: str, prog: str = DEFAULT_PROG) -> str:
    """Validate a node name as an RFC 1123 subdomain; UsageError explains what is wrong."""
    line = usage(verb, prog=prog)
    if len(word) > _MAX_NODE_NAME:
        raise UsageError(
            f"node name is {len(word)} characters; the limit is 253",
            usage=line,
            key="node_name_too_long",
            params={"length": len(word), "limit": _MAX_NODE_NAME},
        )
    if _DNS1123_SUBDOMAIN.fullmatch(word):
        return word
    if _DNS1123_SUBDOMAIN.fullmatch(word.lower()):
        raise UsageError(
            f"node names are lowercase: did you mean {word.lower()}?",
            usage=line,
            key="node_name_case",
            params={"suggestion": word.lower()},
        )
    raise UsageError(
        f"{_shown(word)!r} is not a valid node name: use lowercase letters, digits, '-' "
        "and '.', starting and ending with a letter or digit",
        usage=line,
        key="node_name_invalid",
        params={"name": _shown(word)},
    )


def parse_cluster_name(
    word: str, *, verb: str, prog: str = DEFAULT_PROG, clusters: Collection[str] = ()
) -> str:
    """A DNS-1123 label, and one of ``clusters`` when they are given; UsageError otherwise."""
    line = usage(verb, prog=prog)
    issue = cluster_name_issue(word)
    if issue is not None:
        key, text, params = issue
        raise UsageError(text, usage=line, key=key, params=params)
    if clusters and word not in clusters:
        known = ", ".join(sorted(clusters))
        raise UsageError(
            f"no cluster named {word!r}; the known clusters are: {known}",
            usage=line,
            key="unknown_cluster_named",
            params={"name": word, "known": sorted(clusters)},
        )
    return word


def parse_node_ref(
    word: str, *, verb: str, prog: str = DEFAULT_PROG, clusters: Collection[str] = ()
) -> tuple[str | None, str]:
    """``[CLUSTER/]NODE`` -> (cluster or None, node), each validated."""
    cluster, node = split_node_ref(word)
    if cluster is not None:
        cluster = parse_cluster_name(cluster, verb=verb, prog=prog, clusters=clusters)
        if not node:
            raise UsageError(
                f"{_shown(word)!r} names a cluster but no node; write CLUSTER/NODE",
                usage=usage(verb, prog=prog),
                key="cluster_without_node",
                params={"word": _shown(word)},
            )
    return cluster, parse_node_name(node, verb=verb, prog=prog)


def parse_incident_id(word: str, *, verb: str, prog: str = DEFAULT_PROG) -> str:
    """``inc-7`` / ``7`` / ``INC-0007`` -> ``INC-0007``; UsageError otherwise."""
    number = parse_incident_number(word)
    if number is None:
        raise UsageError(
            f"{_shown(word)!r} is not an incident id; use one like INC-0007 (or just 7)",
            usage=usage(verb, prog=prog),
            key="incident_id_invalid",
            params={"word": _shown(word)},
        )
    return format_incident_id(number)


def _at_most(verb: str, words: list[str], count: int, prog: str) -> None:
    if len(words) > count:
        extra = " ".join(_shown(w) for w in words[count:])
        what = "no arguments" if count == 0 else f"at most {count} argument"
        raise UsageError(
            f"{verb} takes {what}; unexpected: {extra}",
            usage=usage(verb, prog=prog),
            key="too_many_arguments",
            params={"verb": verb, "count": count, "extra": extra},
        )


def _one_node(
    verb: str, args: list[str], prog: str, clusters: Collection[str]
) -> tuple[str | None, str]:
    """The one ``[CLUSTER/]NODE`` a node verb (diagnose, prevent) requires."""
    if not args:
        raise UsageError(
            f"{verb} needs a node name",
            usage=usage(verb, prog=prog),
            key="needs_node",
            params={"verb": verb},
        )
    _at_most(verb, args, 1, prog)
    return parse_node_ref(args[0], verb=verb, prog=prog, clusters=clusters)


def parse(
    text: str, *, prog: str = DEFAULT_PROG, clusters: Collection[str] = ()
) -> Diagnose | Prevent | Status | Top | Timeline | Resolve | Help:
    """Parse one command line (without the ``/gpunode`` prefix). Empty text means ``help``.

    ``clusters``: the known cluster names; a command naming another is refused here. Empty:
    names are only checked for form (the caller checks them against its settings)."""
    words = text.split()
    if not words:
        return Help()
    verb, args = words[0].lower(), words[1:]
    if verb not in _VERBS:
        guess = closest_verb(verb)
        hint = f"; did you mean {guess}?" if guess else ""
        raise UsageError(
            f"unknown command {_shown(words[0])!r}{hint} Try {prog} help.",
            usage=usage_lines(prog=prog),
            key="unknown_command",
            params={"word": _shown(words[0]), "guess": guess or "", "prog": prog},
        )
    if verb == "diagnose":
        cluster, node = _one_node(verb, args, prog, clusters)
        return Diagnose(node=node, cluster=cluster)
    if verb == "prevent":
        cluster, node = _one_node(verb, args, prog, clusters)
        return Prevent(node=node, cluster=cluster)
    if verb == "status":
        _at_most(verb, args, 1, prog)
        if not args:
            return Status()
        cluster, node = parse_node_ref(args[0], verb=verb, prog=prog, clusters=clusters)
        return Status(node=node, cluster=cluster)
    if verb == "top":
        _at_most(verb, args, 1, prog)
        if not args:
            return Top()
        return Top(cluster=parse_cluster_name(args[0], verb=verb, prog=prog, clusters=clusters))
    if verb == "timeline":
        _at_most(verb, args, 1, prog)
        return Timeline(incident=parse_incident_id(args[0], verb=verb, prog=prog) if args else None)
    if verb == "resolve":
        if not args:
            raise UsageError(
                "resolve needs an incident id",
                usage=usage(verb, prog=prog),
                key="needs_incident",
                params={"verb": verb},
            )
        incident = parse_incident_id(args[0], verb=verb, prog=prog)
        return Resolve(incident=incident, note=" ".join(args[1:]))
    _at_most(verb, args, 1, prog)
    if not args:
        return Help()
    topic = args[0].lower()
    if topic not in _VERBS:
        guess = closest_verb(topic)
        hint = f"; did you mean {guess}?" if guess else ""
        raise UsageError(
            f"no command {_shown(args[0])!r}{hint}",
            usage=usage_lines(prog=prog),
            key="no_help_topic",
            params={"word": _shown(args[0]), "guess": guess or ""},
        )
    return Help(topic=topic)


def named(cluster: str | None, node: str) -> str:
    """A node as the command named it: ``CLUSTER/NODE``, or ``NODE`` when no cluster was."""
    return node if cluster is None else f"{cluster}/{node}"


def canonical(cmd: Command) -> str:
    """The command as gpunode understood it (validated words only: never the raw text)."""
    words: list[str] = [cmd.verb]
    if isinstance(cmd, Diagnose | Prevent):
        words.append(named(cmd.cluster, cmd.node))
    elif isinstance(cmd, Top) and cmd.cluster:
        words.append(cmd.cluster)
    elif isinstance(cmd, Timeline | Resolve) and cmd.incident:
        words.append(cmd.incident)
    return " ".join(words)


def parse_in_thread(
    text: str, *, at: NodeRef, incident: str, clusters: Collection[str] = ()
) -> Diagnose | Prevent | Status | Top | Timeline | Resolve | Help:
    """A mention of gpunode inside an incident thread (``@gpunode diagnose``): the same
    grammar as ``parse``, with the thread's incident filling what is left out. The command
    is what follows the first mention (``hey <@U0BOT> timeline``), other mention tokens
    dropped; nothing else: the incident's status; ``diagnose``,
    ``prevent`` or ``status`` alone: its node (``at``); ``timeline`` alone: the incident."""
    first = _MENTION.search(text)
    words = _MENTION.sub(" ", text[first.end() :] if first else text).split()
    if not words:
        return Status(node=at.node, cluster=at.cluster)
    verb = words[0].lower()
    if len(words) == 1:
        if verb == "diagnose":
            return Diagnose(node=at.node, cluster=at.cluster)
        if verb == "prevent":
            return Prevent(node=at.node, cluster=at.cluster)
        if verb == "status":
            return Status(node=at.node, cluster=at.cluster)
        if verb == "timeline":
            return Timeline(incident=incident)
    return parse(" ".join(words), clusters=clusters)
