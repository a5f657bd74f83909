"""The read-side use-cases behind status, top, timeline and resolve.

Shared by the Slack app and the terminal (``bot.cli.ops``); they return data, and
the caller renders it for its surface.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from bot.core.cluster import NodeLoad
from bot.core.incidents import TimelineEntry
from bot.core.quantity import parse_quantity
from bot.errors import UsageError
from bot.services.ports import KubePort, StorePort


@dataclass(frozen=True)
class NodeRank:
    node: str
    memory_pressure: bool
    limits_percent: int | None
    requests_percent: int | None
    working_set_percent: int | None
    score: float


def _percent_of(load: NodeLoad, resource: str) -> tuple[int | None, int | None]:
    for row in load.allocated:
        if row.resource == resource:
            return row.requests_percent, row.limits_percent
    return None, None


def rank_node(load: NodeLoad) -> NodeRank:
    """Pressure score: MemoryPressure condition first, then measured use, then limits."""
    node = load.node
    pressure = any(c.type == "MemoryPressure" and c.status == "True" for c in node.conditions)
    req_pct, lim_pct = _percent_of(load, "memory")
    ws_pct: int | None = None
    alloc = node.allocatable.get("memory")
    if load.working_set_bytes is not None and alloc:
        ws_pct = int(load.working_set_bytes / parse_quantity(alloc).as_float() * 100)
    score = (1000.0 if pressure else 0.0) + float(ws_pct or 0) * 2 + float(lim_pct or 0) / 10
    return NodeRank(node.name, pressure, lim_pct, req_pct, ws_pct, score)


async def top_nodes(kube: KubePort, *, limit: int = 15) -> list[NodeRank]:
    """GPU nodes ranked by memory pressure, from one pass over the fleet (not a cluster view
    per node: a fleet of hundreds of GPU nodes would cost thousands of API calls)."""
    ranks = [rank_node(load) for load in await kube.gpu_node_loads()]
    ranks.sort(key=lambda r: (-r.score, r.node))
    return ranks[:limit]


class IncidentOps:
    """status / timeline / resolve over the store."""

    def __init__(self, store: StorePort, *, clock: Callable[[], datetime]) -> None:
        self._store = store
        self._clock = clock

    async def status(self, node: str | None) -> list[Any]:
        return list(await self._store.open_incidents(node=node))

    async def resolve_id(self, incident: str | None, *, channel: str, thread_ts: str | None) -> Any:
        if incident:
            found = await self._store.get_incident(incident)
        elif thread_ts:
            found = await self._store.find_incident_by_thread(channel, thread_ts)
        else:
            raise UsageError("name the incident, e.g. INC-0001", usage="timeline INCIDENT")
        if found is None:
            raise UsageError(
                f"no incident {incident or 'in this thread'}; `status` lists the open ones",
                usage="timeline INCIDENT",
            )
        return found

    async def timeline(self, incident_id: str) -> list[TimelineEntry]:
        return list(await self._store.timeline(incident_id))

    async def resolve(self, incident_id: str, *, by: str, note: str) -> Any:
        incident = await self._store.get_incident(incident_id)
        if incident is None:
            raise UsageError(f"no incident {incident_id}", usage="resolve INCIDENT [NOTE]")
        if incident.state == "resolved":
            raise UsageError(f"{incident_id} is already resolved", usage="resolve INCIDENT")
        # the store records the transition's timeline entry (with the note) itself
        await self._store.set_incident_state(
            incident_id, "resolved", at=self._clock(), actor=by, note=note
        )
        return await self._store.get_incident(incident_id)
