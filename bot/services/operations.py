"""The read-side use-cases behind status, top, timeline and resolve.

The command table (``bot.services.commands``) calls them for every surface; they return
data, and each surface's presenter words it.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from bot.core.model.cluster import NodeLoad
from bot.core.model.clusters import DEFAULT_CLUSTER
from bot.core.model.incidents import TimelineEntry, TimelineRow
from bot.core.model.quantity import parse_quantity
from bot.core.remedies.autoscalers import release_steps
from bot.errors import GpunodeError, UsageError
from bot.services.clusters import ClusterRegistry, fan_out
from bot.services.executing import run_steps
from bot.services.ports import KubePort, StorePort


@dataclass(frozen=True)
class NodeRank:
    node: str
    memory_pressure: bool
    limits_percent: int | None
    requests_percent: int | None
    working_set_percent: int | None
    score: float
    cluster: str


def _percent_of(load: NodeLoad, resource: str) -> tuple[int | None, int | None]:
    for row in load.allocated:
        if row.resource == resource:
            return row.requests_percent, row.limits_percent
    return None, None


def rank_node(load: NodeLoad, cluster: str) -> NodeRank:
    """Pressure score: MemoryPressure condition first, then measured use, then limits."""
    node = load.node
    pressure = any(c.type == "MemoryPressure" and c.status == "True" for c in node.conditions)
    req_pct, lim_pct = _percent_of(load, "memory")
    ws_pct: int | None = None
    alloc = node.allocatable.get("memory")
    if load.working_set_bytes is not None and alloc:
        ws_pct = int(load.working_set_bytes / parse_quantity(alloc).as_float() * 100)
    score = (1000.0 if pressure else 0.0) + float(ws_pct or 0) * 2 + float(lim_pct or 0) / 10
    return NodeRank(node.name, pressure, lim_pct, req_pct, ws_pct, score, cluster)


def _ranks(loads: list[NodeLoad], cluster: str) -> list[NodeRank]:
    return [rank_node(load, cluster) for load in loads]


async def top_nodes(
    kube: KubePort, *, cluster: str = DEFAULT_CLUSTER, limit: int = 15
) -> list[NodeRank]:
    """GPU nodes ranked by memory pressure, from one pass over the fleet (not a cluster view
    per node: a fleet of hundreds of GPU nodes would cost thousands of API calls)."""
    # a rank per GPU node (1,250 on a 5,000-node fleet): computed off the event loop
    ranks = await asyncio.to_thread(_ranks, await kube.gpu_node_loads(), cluster)
    ranks.sort(key=lambda r: (-r.score, r.node))
    return ranks[:limit]


@dataclass(frozen=True)
class ClusterFailure:
    """A cluster that did not answer (or refused): named, with gpunode's error text (and its
    key and params, for the reader's words)."""

    cluster: str
    code: str
    message: str
    key: str = ""
    params: dict[str, object] = dataclasses.field(default_factory=dict)


@dataclass(frozen=True)
class TopReport:
    """``top`` across clusters: the ranked rows, and the clusters that could not be asked."""

    rows: list[NodeRank]
    failures: list[ClusterFailure]
    #: the failures' errors, for a caller that fails when nothing answered
    errors: list[GpunodeError] = dataclasses.field(default_factory=list)


async def top_across(
    clusters: ClusterRegistry, *, cluster: str | None = None, limit: int = 15
) -> TopReport:
    """GPU nodes of every cluster (or of ``cluster``) ranked together by memory pressure.

    The clusters are asked at once, each within its own timeout (``fan_out``): a slow or
    unreachable cluster is listed in ``failures`` by name and costs the answer at most its
    timeout; the others' rows are ranked all the same."""
    names = (clusters.choose(cluster),) if cluster else None

    async def ask(name: str, kube: KubePort) -> list[NodeRank]:
        return await asyncio.to_thread(_ranks, await kube.gpu_node_loads(), name)

    rows: list[NodeRank] = []
    failures: list[ClusterFailure] = []
    errors: list[GpunodeError] = []
    for answer in await fan_out(clusters, ask, clusters=names):
        if answer.error is not None:
            err = answer.error
            failures.append(
                ClusterFailure(answer.cluster, err.code, err.message, err.key, dict(err.params))
            )
            errors.append(answer.error)
        else:
            rows.extend(answer.value or [])
    rows.sort(key=lambda r: (-r.score, r.cluster, r.node))
    return TopReport(rows[:limit], failures, errors)


class IncidentOps:
    """status / timeline / resolve over the store."""

    def __init__(
        self,
        store: StorePort,
        *,
        clock: Callable[[], datetime],
        clusters: ClusterRegistry,
    ) -> None:
        """``clusters``: where resolve removes the autoscaler scale-down protection tier 1
        put on the node (in each action's cluster; a port is built only when one is
        needed)."""
        self._store = store
        self._clock = clock
        self._clusters = clusters

    async def status(self, node: str | None, cluster: str | None = None) -> list[Any]:
        """Open incidents (of ``node``; in ``cluster``, or in any cluster when None)."""
        return list(await self._store.open_incidents(node=node, cluster=cluster))

    async def find(self, incident_id: str) -> Any:
        """The incident ``incident_id``, or None when the store has none."""
        return await self._store.get_incident(incident_id)

    async def resolve_id(self, incident: str | None, *, channel: str, thread_ts: str | None) -> Any:
        if incident:
            found = await self._store.get_incident(incident)
        elif thread_ts:
            found = await self._store.find_incident_by_thread(channel, thread_ts)
        else:
            raise UsageError(
                "name the incident, e.g. INC-0001",
                usage="timeline INCIDENT",
                key="no_incident_named",
            )
        if found is None:
            raise UsageError(
                f"no incident {incident or 'in this thread'}; `status` lists the open ones",
                usage="timeline INCIDENT",
                key="no_such_incident",
                params={"incident": incident or ""},
            )
        return found

    async def timeline(self, incident_id: str) -> list[TimelineRow]:
        return list(await self._store.timeline(incident_id))

    async def resolve(self, incident_id: str, *, by: str, note: str) -> Any:
        incident = await self._store.get_incident(incident_id)
        if incident is None:
            raise UsageError(
                f"no incident {incident_id}; `status` lists the open ones",
                usage="resolve INCIDENT [NOTE]",
                key="no_such_incident",
                params={"incident": incident_id},
            )
        if incident.state == "resolved":
            raise UsageError(
                f"{incident_id} is already resolved",
                usage="resolve INCIDENT",
                key="incident_already_resolved",
                params={"incident": incident_id},
            )
        # the store records the transition's timeline entry (with the note) itself
        await self._store.set_incident_state(
            incident_id, "resolved", at=self._clock(), actor=by, note=note
        )
        await self._release(incident_id)
        return await self._store.get_incident(incident_id)

    async def _release(self, incident_id: str) -> None:
        """Remove the scale-down protection tier 1 added for the incident (only what it
        added: the recorded undo of its ``annotate_node`` steps), and record the outcome on
        the timeline. A failure is recorded, never raised: the incident is resolved."""
        by_cluster: dict[str, list[Any]] = {}
        for record in await self._store.actions_for_incident(incident_id):
            steps = release_steps([(record.state, record.result)])
            if steps:
                # an action recorded before clusters existed acted in the default one
                by_cluster.setdefault(self._clusters.stored(record.cluster), []).extend(steps)
        for cluster, steps in sorted(by_cluster.items()):
            try:
                result = await run_steps(self._clusters.port(cluster), steps, dry_run=False)
                error = result.error
            except GpunodeError as exc:
                error = exc
            nodes = sorted({s.name for s in steps})
            data: dict[str, Any] = {"scale_down_protection": "removed", "nodes": nodes}
            if error is not None:
                data |= {"scale_down_protection": "not_removed", "error": error.message}
            await self._store.append_timeline(
                TimelineEntry(
                    incident_id=incident_id,
                    at=self._clock(),
                    kind="note",
                    actor="gpunode",
                    text=(
                        f"scale-down protection removed from {', '.join(nodes)}"
                        if error is None
                        else f"could not remove the scale-down protection from "
                        f"{', '.join(nodes)}: {error.message}; remove the annotations by hand"
                    ),
                    data=data,
                )
            )
