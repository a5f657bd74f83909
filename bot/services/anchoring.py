"""Anchor the audit chain outside the store, and check the store against the anchors.

Every ``every`` audit rows (a row whose id is a multiple of it) and at each incident resolve,
the chain's head (row id and hash) is posted as a Kubernetes Event on the bot's Deployment
(``bot.kube.anchoring``); at a resolve also into the incident thread, as a small context
line. Whoever rewrites the whole store (recomputing every hash) cannot rewrite those:
``check`` (``gpunode audit --verify --anchors``) finds each anchored row and compares its
hash. An anchor that cannot be posted is logged, never the action's failure.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol, runtime_checkable

from bot.core.model.incidents import Incident
from bot.core.reporting.outcomes import AuditAnchored
from bot.errors import GpunodeError
from bot.services.ports import StorePort, ThreadPort

log = logging.getLogger(__name__)

#: anchor every this many audit rows unless ``store.anchor_every`` says otherwise
DEFAULT_EVERY = 100


@runtime_checkable
class AnchorPort(Protocol):
    """Where anchors go and come back from (``bot.kube.gateway.Gateway``)."""

    async def post_audit_anchor(
        self, deployment: str, row_id: int, row_hash: str, *, at: datetime
    ) -> None: ...

    async def audit_anchors(self, deployment: str) -> list[Any]: ...


class HeadStore(StorePort, Protocol):
    async def audit_head(self) -> tuple[int, str]: ...

    async def audit_hashes(self, ids: list[int]) -> dict[int, str]: ...


class Anchors:
    def __init__(
        self,
        store: HeadStore,
        sink: AnchorPort | None,
        thread: ThreadPort | None,
        *,
        deployment: str,
        every: int,
        clock: Callable[[], datetime],
        spawn: Callable[[Coroutine[Any, Any, Any]], None] | None = None,
    ) -> None:
        self._store = store
        self._sink = sink
        #: where the head is posted at a resolve, as an outcome (the presenter words it)
        self._thread = thread
        self._deployment = deployment
        self._every = every
        self._clock = clock
        #: where the every-N anchor runs (the runtime's Background, so an append never waits
        #: on the API server); None: awaited in place (tools, tests)
        self._spawn = spawn

    async def after_append(self, row_id: int) -> None:
        """The store's hook: anchor when ``row_id`` is a multiple of ``every``."""
        if self._every > 0 and row_id % self._every == 0:
            if self._spawn is not None:
                self._spawn(self.anchor())
            else:
                await self.anchor()

    async def anchor(
        self,
        *,
        channel: str = "",
        thread_ts: str | None = None,
        incident: Incident | None = None,
    ) -> tuple[int, str]:
        """Post the current head (as an Event; into the thread when one is given:
        ``incident``'s, in its language, or ``channel``/``thread_ts``)."""
        if incident is not None:
            channel, thread_ts = incident.channel, incident.thread_ts
        row_id, row_hash = await self._store.audit_head()
        if row_id == 0:
            return row_id, row_hash
        if self._sink is not None:
            try:
                await self._sink.post_audit_anchor(
                    self._deployment, row_id, row_hash, at=self._clock()
                )
            except GpunodeError as exc:
                log.warning("could not anchor audit row %s as an Event: %s", row_id, exc)
        if self._thread is not None and channel and thread_ts:
            told = AuditAnchored(row_id=row_id, row_hash=row_hash)
            try:
                await self._thread.post(channel, told, incident=incident, thread_ts=thread_ts)
            except GpunodeError as exc:
                log.warning("could not anchor audit row %s in the thread: %s", row_id, exc)
        return row_id, row_hash


@dataclass(frozen=True)
class AnchorReport:
    """How many anchors were compared, and the first that the store contradicts."""

    checked: int
    problem: str = ""

    @property
    def ok(self) -> bool:
        return not self.problem


async def check(store: HeadStore, anchors: list[Any]) -> AnchorReport:
    """Every anchored row is in the store with the anchored hash (``anchors``: items with
    ``row_id``, ``row_hash`` and ``at``)."""
    ids = sorted({int(a.row_id) for a in anchors})
    held = await store.audit_hashes(ids)
    for a in sorted(anchors, key=lambda a: int(a.row_id)):
        found = held.get(int(a.row_id))
        if found is None:
            return AnchorReport(
                len(anchors),
                f"row {a.row_id}, anchored at {a.at or 'an unknown time'}, is missing from the "
                "log (cut or rewritten)",
            )
        if found != a.row_hash:
            return AnchorReport(
                len(anchors),
                f"row {a.row_id} has hash {found[:12]}… but was anchored at "
                f"{a.at or 'an unknown time'} with {a.row_hash[:12]}… (the log was rewritten)",
            )
    return AnchorReport(len(anchors))
