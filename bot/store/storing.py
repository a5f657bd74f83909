"""The async incident store, on SQLite or PostgreSQL (``engines`` runs the calls).

Every call hops to a store thread, so the event loop never blocks on disk or network.
Several replicas may share the database: the claims and ``remember_event`` are single
statements, incident numbering, the audit chain and approval updates are transactions
serialised by a named lock (``Db.transaction``). Driver errors become ``StoreError`` here,
once. The store never reads the clock: callers pass ``at``.
"""

from __future__ import annotations

import asyncio
import logging
import re
import time
from collections.abc import Awaitable, Callable
from datetime import datetime
from types import TracebackType
from typing import Any, TypeVar

from bot.core.diagnosis.findings import Diagnosis
from bot.core.governance.approvals import ApprovalRequest
from bot.core.model import actors
from bot.core.model.cluster import ClusterView
from bot.core.model.clusters import DEFAULT_CLUSTER
from bot.core.model.evidence import EvidenceBundle
from bot.core.model.incidents import Incident, IncidentState, TimelineEntry, TimelineRow
from bot.core.reporting.records import (
    ActionRecord,
    ActionState,
    AuditRecord,
    ChainReport,
    EvidenceSnapshot,
)
from bot.errors import GpunodeError, StoreError
from bot.store import action_rows, incident_rows, record_rows
from bot.store.db import Db, DbError
from bot.store.engines import Runner, open_runner
from bot.store.values import dumps

T = TypeVar("T")
audit_log = logging.getLogger("gpunode.audit")
log = logging.getLogger(__name__)

#: how stale ``open_incidents`` may be for writes made by *another* replica sharing the
#: database (this store's own writes are seen at once): a status listing, not a decision
OPEN_INCIDENTS_TTL_S = 2.0


class Store:
    """Open with ``await Store.open(target)``; close with ``await store.close()`` (or
    ``async with``). ``target``: a SQLite path (``":memory:"`` for tests, or
    ``sqlite:///path``) or a PostgreSQL DSN (``postgresql://user@host/db``); see
    ``engines`` for how each engine runs the calls. Writes go through the runner's writer,
    queries through its reader; both engines run the same row functions."""

    def __init__(self, runner: Runner) -> None:
        self._runner = runner
        #: the SQLite path, or the PostgreSQL DSN without its password
        self.path = runner.where
        #: ``sqlite`` or ``postgres``
        self.engine = runner.engine
        self._closed = False
        self._open_cache: tuple[float, list[Incident]] | None = None
        self._incident_generation = 0
        #: the open incidents' query in flight, and the write generation it started at
        self._open_flight: tuple[int, asyncio.Future[list[Incident]]] | None = None
        #: log each new audit row as JSON on ``gpunode.audit`` (settings: store.audit_to_log)
        self.export_audit = False
        #: the audit key (``store.audit_key``): rows are signed with it and verified against it
        self.audit_key: bytes | None = None
        #: awaited with each new audit row's id (the anchors, bot.services.anchoring); what it
        #: raises is logged, never the append's failure
        self.on_audit: Callable[[int], Awaitable[None]] | None = None
        #: told ``(operation, seconds)`` after each operation, its queueing included (metrics)
        self.observe_latency: Callable[[str, float], None] | None = None

    @classmethod
    async def open(cls, target: str) -> Store:
        try:
            runner = await open_runner(target)
        except GpunodeError:
            raise
        except (DbError, OSError) as exc:
            where = redact(target)
            raise StoreError(
                f"cannot open the incident store {where}: {exc}; check store.path "
                "(GPUNODE_STORE__PATH): a writable SQLite path, or a reachable PostgreSQL DSN"
            ) from exc
        return cls(runner)

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        await self._runner.close()

    async def __aenter__(self) -> Store:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

    async def _run(self, fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> T:
        """A write (or read-modify-write): on the writer, in submission order."""
        return await self._on(self._runner.write, fn, *args, **kwargs)

    async def _read(self, fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> T:
        """A query: on the reader, never queued behind writes."""
        return await self._on(self._runner.read, fn, *args, **kwargs)

    async def _on(
        self, how: Callable[..., Awaitable[T]], fn: Callable[..., T], /, *args: Any, **kwargs: Any
    ) -> T:
        if self._closed:
            raise StoreError("the incident store is closed; this is a bug in the caller")
        started = time.perf_counter()
        try:
            return await how(fn, *args, **kwargs)
        except GpunodeError:
            raise
        except DbError as exc:
            raise StoreError(f"the incident store {self.path} failed: {exc}") from exc
        finally:
            if self.observe_latency is not None:
                operation = getattr(fn, "__name__", "other").lstrip("_")
                self.observe_latency(operation, time.perf_counter() - started)

    # incidents ----------------------------------------------------------------------------

    async def open_or_join_incident(
        self,
        node: str,
        channel: str,
        *,
        opened_by: str,
        at: datetime,
        alert_fingerprint: str | None = None,
        cluster: str = DEFAULT_CLUSTER,
        locale: str,
    ) -> tuple[Incident, bool]:
        """The node's open incident in ``cluster`` (created=False) or a new one (True), which
        keeps ``locale`` as its thread's language. Without a cluster: the one cluster of a
        single-cluster bot, ``default``."""
        return await self._incident_write(
            incident_rows.open_or_join,
            node,
            channel,
            opened_by=opened_by,
            at=at,
            alert_fingerprint=alert_fingerprint,
            cluster=cluster,
            locale=locale,
        )

    async def adopt_unclustered(self, cluster: str) -> int:
        """Give rows written before clusters existed to ``cluster`` (see incident_rows)."""
        return await self._incident_write(incident_rows.adopt_unclustered, cluster)

    async def claim_root(
        self, incident_id: str, claimer: str, *, at: datetime, stale_before: datetime
    ) -> bool:
        """True for exactly one caller, who posts the root and then ``set_incident_thread``."""
        return await self._run(
            incident_rows.claim_root, incident_id, claimer, at=at, stale_before=stale_before
        )

    async def release_root(self, incident_id: str, claimer: str) -> None:
        await self._run(incident_rows.release_root, incident_id, claimer)

    async def set_incident_thread(
        self, incident_id: str, *, root_ts: str, channel: str | None = None
    ) -> Incident:
        return await self._incident_write(
            incident_rows.set_thread, incident_id, root_ts=root_ts, channel=channel
        )

    async def set_incident_state(
        self,
        incident_id: str,
        state: IncidentState,
        *,
        at: datetime,
        actor: str = actors.GPUNODE,
        note: str = "",
    ) -> tuple[Incident, TimelineEntry | None]:
        """Apply the core transition (IncidentStateError when not allowed) and record it."""
        return await self._incident_write(
            incident_rows.set_state, incident_id, state, at=at, actor=actor, note=note
        )

    async def save_incident(self, incident: Incident) -> None:
        await self._incident_write(incident_rows.save_incident, incident)

    async def get_incident(self, incident_id: str) -> Incident | None:
        return await self._read(incident_rows.get_incident, incident_id)

    async def find_incident_by_thread(self, channel: str, thread_ts: str) -> Incident | None:
        return await self._read(incident_rows.find_by_thread, channel, thread_ts)

    async def incidents_for_node(self, node: str, cluster: str | None = None) -> list[Incident]:
        """The node's incidents in ``cluster`` (every cluster when None), oldest first."""
        return await self._read(incident_rows.incidents_for_node, node, cluster)

    async def open_incidents(
        self, node: str | None = None, cluster: str | None = None
    ) -> list[Incident]:
        """Open incidents (of ``node``), oldest first.

        Served from memory when fresh: ``/gpunode status`` is answered inside the slash
        command's acknowledgement, and a query costs a thread hop that a busy event loop
        makes slow (bench/ack.py). Every incident write through this store drops the copy;
        writes by another replica show within ``OPEN_INCIDENTS_TTL_S``."""
        cached = self._open_cache
        if cached is None or time.monotonic() - cached[0] > OPEN_INCIDENTS_TTL_S:
            rows = await self._read_open_incidents()
        else:
            rows = cached[1]
        return [
            i
            for i in rows
            if (node is None or i.node == node) and (cluster is None or i.cluster == cluster)
        ]

    async def _read_open_incidents(self) -> list[Incident]:
        """One query for every caller that asks while it runs: when the copy is dropped
        (a diagnosis writes its incident) and 64 acks ask at once, they share one read
        instead of queueing 64 behind each other on the reader thread. A caller that asks
        after a write joins no read started before it."""
        generation = self._incident_generation
        flight = self._open_flight
        if flight is None or flight[0] != generation:
            started = time.monotonic()
            read = asyncio.ensure_future(self._read(incident_rows.open_incidents, None))
            flight = (generation, read)
            self._open_flight = flight

            def landed(done: asyncio.Future[list[Incident]]) -> None:
                if self._open_flight is flight:
                    self._open_flight = None
                if done.cancelled() or done.exception() is not None:
                    return  # each caller sees the error; nothing is kept
                if generation == self._incident_generation:  # no write raced the read
                    self._open_cache = (started, done.result())

            read.add_done_callback(landed)
        # shielded: one caller giving up (a timeout) does not cancel the others' read
        return await asyncio.shield(flight[1])

    async def recent_incidents(self, limit: int) -> list[Incident]:
        """The ``limit`` newest incidents, open or resolved, newest first (the Home tab)."""
        return await self._read(incident_rows.recent_incidents, limit)

    async def _incident_write(self, fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> T:
        """A write that may change which incidents are open: drop the in-memory copy."""
        try:
            return await self._run(fn, *args, **kwargs)
        finally:
            self._incident_generation += 1
            self._open_cache = None

    async def append_timeline(self, entry: TimelineEntry) -> int:
        """Append one entry, kept with its incident's cluster (``TimelineRow``); returns its
        sequence number."""
        return await self._run(incident_rows.insert_timeline, entry)

    async def timeline(self, incident_id: str) -> list[TimelineRow]:
        return await self._read(incident_rows.timeline, incident_id)

    async def state_messages(self, incident_id: str) -> list[str]:
        """The ts of the incident's current-state messages (one keyed read; [] when none)."""
        return await self._read(incident_rows.state_messages, incident_id)

    async def set_state_messages(self, incident_id: str, state_ts: list[str]) -> None:
        await self._run(incident_rows.set_state_messages, incident_id, state_ts)

    async def save_snapshot(
        self,
        incident_id: str,
        *,
        at: datetime,
        bundle: EvidenceBundle,
        view: ClusterView,
        diagnosis: Diagnosis,
    ) -> str:
        """Store one evidence capture (as the models' JSON, which the hash covers); returns
        its sha256 (shown in the thread)."""
        # summarised, dumped and compressed on a thread of its own: neither the event
        # loop nor the store's writer waits for it
        packed = await asyncio.to_thread(incident_rows.capture, bundle, view, diagnosis)
        snap = await self._run(incident_rows.save_capture, incident_id, at=at, capture=packed)
        return snap.sha256

    async def snapshots(self, incident_id: str) -> list[EvidenceSnapshot]:
        """Every evidence capture of the incident, oldest first (for before/after diffs)."""
        return await self._read(incident_rows.snapshots, incident_id)

    async def latest_snapshot(self, incident_id: str) -> EvidenceSnapshot | None:
        return await self._read(incident_rows.latest_snapshot, incident_id)

    async def prune_evidence(self, *, before: datetime) -> int:
        """Evidence retention: snapshots taken before ``before`` keep only their diagnosis
        (the summary); the bundle and cluster view go. Returns how many were pruned."""
        total = 0
        while pruned := await self._run(incident_rows.prune_evidence, before=before):
            total += pruned
        return total

    # actions and approvals ----------------------------------------------------------------

    async def create_action(self, record: ActionRecord) -> None:
        await self._run(action_rows.insert_action, record)

    async def get_action(self, action_id: str) -> ActionRecord | None:
        return await self._read(action_rows.get_action, action_id)

    async def claim_action(self, action_id: str, replica_id: str, *, at: datetime) -> bool:
        """True for exactly one caller across threads, connections and processes."""
        return await self._run(action_rows.claim_action, action_id, replica_id, at=at)

    async def claim_undo(self, action_id: str, replica_id: str, *, at: datetime) -> bool:
        """True for exactly one caller: the undo of a succeeded action runs once."""
        return await self._run(action_rows.claim_undo, action_id, replica_id, at=at)

    async def transition_action(
        self, action_id: str, to: ActionState, *, at: datetime, result: dict[str, Any] | None = None
    ) -> bool:
        return await self._run(action_rows.transition_action, action_id, to, at=at, result=result)

    async def set_action_state(
        self,
        action_id: str,
        state: ActionState,
        *,
        at: datetime,
        result: dict[str, Any] | None = None,
    ) -> bool:
        """Same as ``transition_action`` (the name the action service uses)."""
        return await self.transition_action(action_id, state, at=at, result=result)

    async def set_action_message(self, action_id: str, message_ts: str) -> None:
        await self._run(action_rows.set_message_ts, action_id, message_ts)

    async def note_action(self, action_id: str, values: dict[str, Any]) -> bool:
        """Merge ``values`` into the action's ``result`` without changing its state (e.g.
        the ts of its approval message, so the message can lose its buttons once decided).
        A later ``set_action_state(..., result=...)`` replaces the whole result. False when
        there is no such action."""
        return await self._run(_merge_result, action_id, dumps(values))

    async def actions_for_incident(self, incident_id: str) -> list[ActionRecord]:
        return await self._read(action_rows.actions_for_incident, incident_id)

    async def interrupted_actions(
        self, *, orphaned_before: datetime | None = None
    ) -> list[ActionRecord]:
        """Claimed or running actions (of replicas not alive since ``orphaned_before``)."""
        return await self._read(action_rows.interrupted_actions, orphaned_before)

    async def beat(self, replica_id: str, *, at: datetime) -> None:
        """Record that ``replica_id`` is alive (every replica, every few seconds)."""
        await self._run(record_rows.beat, replica_id, at=at)

    async def live_replicas(self, since: datetime) -> list[str]:
        """Replicas that said they were alive at or after ``since``."""
        return await self._read(record_rows.live_replicas, since)

    async def save_approval(self, req: ApprovalRequest) -> None:
        await self._run(action_rows.save_approval, req)

    async def get_approval(self, approval_id: str) -> ApprovalRequest | None:
        return await self._read(action_rows.get_approval, approval_id)

    async def approval_for_action(self, action_id: str) -> ApprovalRequest | None:
        return await self._read(action_rows.approval_for_action, action_id)

    async def pending_approvals(self) -> list[ApprovalRequest]:
        return await self._read(action_rows.pending_approvals)

    async def update_approval(
        self, approval_id: str, change: Callable[[ApprovalRequest], tuple[ApprovalRequest, T]]
    ) -> tuple[ApprovalRequest, T]:
        """Apply a pure change (``lambda r: approvals.approve(r, user, at, eligible=...)``)
        atomically: read, change, write in one write transaction."""
        return await self._run(action_rows.update_approval, approval_id, change)

    # dedupe and audit ---------------------------------------------------------------------

    async def remember_event(self, key: str, *, at: datetime) -> bool:
        """True the first time ``key`` is seen (Slack retries and double clicks get False)."""
        return await self._run(record_rows.remember_event, key, at=at)

    async def seen_event(self, key: str) -> bool:
        """Whether ``remember_event(key)`` happened already (on the writer: no lag)."""
        return await self._run(record_rows.seen_event, key)

    async def forget_events_before(self, before: datetime) -> int:
        return await self._run(record_rows.forget_events_before, before)

    async def remember_alert_group(
        self, group_key: str, status: str, *, at: datetime, incident_id: str | None = None
    ) -> bool:
        return await self._run(
            record_rows.remember_alert_group, group_key, status, at=at, incident_id=incident_id
        )

    async def link_alert_group(self, group_key: str, incident_id: str) -> None:
        await self._run(record_rows.link_alert_group, group_key, incident_id)

    async def incident_for_alert_group(self, group_key: str) -> str | None:
        return await self._read(record_rows.incident_for_alert_group, group_key)

    async def append_audit(self, record: AuditRecord) -> int:
        """Append one audit row (rows can never be changed or deleted); returns its id.

        With ``export_audit`` set, the stored row (its hash included) is also logged as one
        JSON line on the ``gpunode.audit`` logger: a copy outside the store's file."""
        stored = await self._run(record_rows.append_audit, record, self.audit_key)
        if self.export_audit:
            audit_log.info("%s", dumps(stored.model_dump(mode="json")))
        if self.on_audit is not None and stored.id:
            try:
                await self.on_audit(stored.id)
            except Exception:
                log.exception("audit row %s: the after-append hook failed", stored.id)
        return stored.id or 0

    async def audit_head(self) -> tuple[int, str]:
        """The chain's head: the newest row's id and hash ((0, GENESIS) before any row)."""
        return await self._read(record_rows.audit_head)

    async def audit_hashes(self, ids: list[int]) -> dict[int, str]:
        """``row_hash`` of each of ``ids`` that the log holds."""
        return await self._read(record_rows.audit_hashes, ids)

    async def verify_audit(self) -> ChainReport:
        """Check the audit hash chain; the first bad row and why, or how many rows hold."""
        return await self._read(record_rows.verify_audit, self.audit_key)

    async def audit_since(self, since: datetime | None = None) -> list[AuditRecord]:
        return await self._read(record_rows.audit_since, since)


def _merge_result(conn: Db, action_id: str, values_json: str) -> bool:
    """One UPDATE (atomic across replicas): merge ``values`` into ``result``'s top level."""
    cur = conn.execute(
        f"UPDATE actions SET result={conn.dialect.merge_result_sql} WHERE action_id=?",  # noqa: S608
        (values_json, action_id),
    )
    return cur.rowcount == 1


def redact(target: str) -> str:
    """A store target fit for messages: a DSN loses its password."""
    return re.sub(r"(://[^:/@]+):[^@]*@", r"\1:***@", target)
