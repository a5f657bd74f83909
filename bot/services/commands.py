"""The command table: ``handle(command, asker)`` carries out one parsed command.

Every surface (the slash command, a mention in an incident thread, the terminal) parses its
text with the one grammar (``bot.core.governance.commands``), calls ``handle``, and presents the
typed outcome it gets back (``bot.core.reporting.outcomes``). No surface dispatches by itself: the
verb's handler, and the permission it needs, are declared here once, in ``TABLE``.

What differs between surfaces is lent by the surface as a ``CommandSurface``: who may do
what (the role policy in chat; the terminal is whoever holds the store and the kubeconfig),
and the effects that belong where the command came from (a diagnosis posts an incident
thread in chat). The table checks the permission in the cluster in question before the
handler runs, so a refusal is always an outcome (``Refused``), audited by the surface.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Protocol

from bot.core.governance import commands
from bot.core.governance.policy import Permission
from bot.core.model.clusters import NodeRef
from bot.core.model.incidents import Incident
from bot.core.reporting.outcomes import (
    ClusterLeftOut,
    HelpAsked,
    IncidentLine,
    Outcome,
    RankedNode,
    Refused,
    StatusList,
    TopNodes,
)
from bot.services.clusters import ClusterRegistry, incident_at
from bot.services.operations import IncidentOps, top_across


@dataclass(frozen=True)
class Asker:
    """Who asks, and where: ``channel``/``thread_ts`` in chat ("" and None in a terminal).
    A refusal or an answer goes back there."""

    user: str
    channel: str = ""
    thread_ts: str | None = None


class CommandSurface(Protocol):
    """What a surface lends the table: the incidents, the clusters, its policy, and the
    effects that happen where the command was asked."""

    @property
    def ops(self) -> IncidentOps: ...

    @property
    def clusters(self) -> ClusterRegistry: ...

    async def refusal(
        self, permission: Permission, asker: Asker, cluster: str | None
    ) -> Refused | None:
        """The policy's refusal of ``permission`` in ``cluster`` (None: no one cluster is
        in question), audited; None when allowed."""

    async def diagnose(self, at: NodeRef, asker: Asker) -> Outcome:
        """Diagnose the node where the surface shows a diagnosis."""

    async def prevent(self, at: NodeRef, asker: Asker) -> Outcome:
        """The node's prevention kit, where the surface shows one."""

    async def timeline(self, incident: Incident, asker: Asker) -> Outcome:
        """The incident's postmortem draft, where the surface shows one."""

    async def resolved(self, incident: Incident, asker: Asker, note: str) -> Outcome:
        """After the incident was resolved: what the surface tells its thread and others."""


# -- the handlers: one per verb, each given the cluster its permission was checked in ----


async def _diagnose(
    d: CommandSurface, cmd: commands.Diagnose, asker: Asker, cluster: str | None
) -> Outcome:
    assert cluster is not None  # _where chooses one
    return await d.diagnose(NodeRef(cluster=cluster, node=cmd.node), asker)


async def _prevent(
    d: CommandSurface, cmd: commands.Prevent, asker: Asker, cluster: str | None
) -> Outcome:
    assert cluster is not None  # _where chooses one
    return await d.prevent(NodeRef(cluster=cluster, node=cmd.node), asker)


async def _status(
    d: CommandSurface, cmd: commands.Status, asker: Asker, cluster: str | None
) -> Outcome:
    rows = await d.ops.status(cmd.node, cmd.cluster)
    return StatusList(
        incidents=tuple(
            IncidentLine(
                id=i.id, at=incident_at(d.clusters, i), state=i.state, opened_at=i.opened_at
            )
            for i in rows
        ),
        asked=commands.named(cmd.cluster, cmd.node) if cmd.node else None,
        show_cluster=d.clusters.multi,
    )


async def _top(d: CommandSurface, cmd: commands.Top, asker: Asker, cluster: str | None) -> Outcome:
    report = await top_across(d.clusters, cluster=cluster)
    return TopNodes(
        rows=tuple(
            RankedNode(
                at=NodeRef(cluster=r.cluster, node=r.node),
                memory_pressure=r.memory_pressure,
                working_set_percent=r.working_set_percent,
                limits_percent=r.limits_percent,
                requests_percent=r.requests_percent,
            )
            for r in report.rows
        ),
        failures=tuple(
            ClusterLeftOut(
                cluster=f.cluster, code=f.code, message=f.message, key=f.key, params=f.params
            )
            for f in report.failures
        ),
        asked=1 if cluster else len(d.clusters.names),
        show_cluster=d.clusters.multi,
    )


async def _timeline(
    d: CommandSurface, cmd: commands.Timeline, asker: Asker, cluster: str | None
) -> Outcome:
    incident = await d.ops.resolve_id(
        cmd.incident, channel=asker.channel, thread_ts=asker.thread_ts
    )
    return await d.timeline(incident, asker)


async def _resolve(
    d: CommandSurface, cmd: commands.Resolve, asker: Asker, cluster: str | None
) -> Outcome:
    incident = await d.ops.resolve(cmd.incident, by=asker.user, note=cmd.note)
    return await d.resolved(incident, asker, cmd.note)


async def _help(
    d: CommandSurface, cmd: commands.Help, asker: Asker, cluster: str | None
) -> Outcome:
    return HelpAsked(topic=cmd.topic)


# -- where each verb's permission is checked: the cluster it acts in, or None ------------


async def _chosen(d: CommandSurface, cmd: Any, asker: Asker) -> str | None:
    """The cluster the command names, else the channel's, else the default."""
    return d.clusters.choose(cmd.cluster, channel=asker.channel)


async def _named(d: CommandSurface, cmd: Any, asker: Asker) -> str | None:
    """The cluster the command names (checked against the known ones), else None: a read
    across clusters, allowed by a role in any."""
    return d.clusters.choose(cmd.cluster) if cmd.cluster else None


async def _named_as_typed(d: CommandSurface, cmd: Any, asker: Asker) -> str | None:
    return str(cmd.cluster) if cmd.cluster else None


async def _of_incident(d: CommandSurface, cmd: Any, asker: Asker) -> str | None:
    """The incident's cluster; None when none is named or it is unknown (the handler then
    says so, to someone allowed to read incidents at all)."""
    incident = await d.ops.find(cmd.incident) if cmd.incident else None
    return incident_at(d.clusters, incident).cluster if incident is not None else None


async def _nowhere(d: CommandSurface, cmd: Any, asker: Asker) -> str | None:
    return None


Handler = Callable[[CommandSurface, Any, Asker, str | None], Awaitable[Outcome]]
Where = Callable[[CommandSurface, Any, Asker], Awaitable[str | None]]


@dataclass(frozen=True)
class Entry:
    """One verb of the grammar: its command type, the permission it needs (None: anyone),
    where that permission is checked, its handler, and whether it is a quick local read
    (a surface may answer it at once, as Slack does in the slash command's ack)."""

    command: type[commands._Command]
    permission: Permission | None
    where: Where
    run: Handler
    quick: bool = False

    @property
    def verb(self) -> str:
        return str(self.command.model_fields["verb"].default)


TABLE: tuple[Entry, ...] = (
    Entry(commands.Diagnose, "diagnose", _chosen, _diagnose),
    Entry(commands.Prevent, "view", _chosen, _prevent),
    Entry(commands.Status, "view", _named_as_typed, _status, quick=True),
    Entry(commands.Top, "view", _named, _top),
    Entry(commands.Timeline, "view", _of_incident, _timeline),
    Entry(commands.Resolve, "resolve", _of_incident, _resolve),
    Entry(commands.Help, None, _nowhere, _help, quick=True),
)


def _by_verb(table: tuple[Entry, ...]) -> dict[str, Entry]:
    found: dict[str, Entry] = {}
    for entry in table:
        if entry.verb in found:
            raise ValueError(f"the command table has two handlers for {entry.verb!r}")
        found[entry.verb] = entry
    return found


BY_VERB = _by_verb(TABLE)


def entry(verb: str) -> Entry:
    """The table's entry for ``verb`` (KeyError for a verb the grammar does not have)."""
    return BY_VERB[verb]


async def handle(command: commands.Command, asker: Asker, surface: CommandSurface) -> Outcome:
    """Carry out ``command`` for ``asker``: the permission its verb needs, checked in the
    cluster in question (a ``Refused`` when not held), then its handler's outcome. A
    ``GpunodeError`` (no such incident, a cluster that did not answer) is raised as it is:
    the surface words it with its code."""
    e = BY_VERB[command.verb]
    if e.permission is not None:
        cluster = await e.where(surface, command, asker)
        no = await surface.refusal(e.permission, asker, cluster)
        if no is not None:
            return no
    else:
        cluster = None
    return await e.run(surface, command, asker, cluster)
