"""Background work on one replica at a time: leader election over a Kubernetes Lease.

Every replica serves Slack (HTTP or Socket Mode): what a click or a command does is decided
by the store's atomic claims, so any replica may take any request. What no request starts
runs on the leader only:
- approval expiry (``ActService.expire_overdue``) every ``approval_sweep_s``;
- reconciliation of actions left ``claimed``/``running`` by a replica that stopped: when this
  replica becomes leader, then every ``reconcile_s``; an action counts as orphaned when its
  claimer has not said it is alive (``Store.beat``) for a lease duration;
- the sweep of old Slack dedupe keys (``Store.forget_events_before``).
Each replica says it is alive every ``retry_s`` whether it leads or not.

Election (:class:`LeaderElector`) follows client-go's: try to acquire or renew every
``retry_s``; a leader that could not renew for ``renew_deadline_s`` steps down before its
Lease can expire under it; on a clean stop the leader releases the Lease (no holder) so
another replica takes over at once (a rolling update does not wait out the lease). With no
Lease configured (one replica, the SQLite default) this replica always leads.

Metrics hook: ``on_change(holder, me)`` is called whenever the known holder or this
replica's leadership changes (e.g. a telemetry ``set_leader(identity, me)``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Protocol

from bot.core.governance.leases import LeaseRecord, Observation, decide, observe, released
from bot.errors import ConflictError, GpunodeError

log = logging.getLogger(__name__)

#: how long Slack retries an event (its last retry comes within an hour): dedupe keys older
#: than a day can go
DEDUPE_KEEP = timedelta(days=1)


class LeasePort(Protocol):
    async def read(self) -> LeaseRecord | None: ...

    async def create(self, record: LeaseRecord) -> LeaseRecord: ...

    async def replace(self, record: LeaseRecord) -> LeaseRecord: ...


class LeaderWorkStore(Protocol):
    async def beat(self, replica_id: str, *, at: datetime) -> None: ...

    async def forget_events_before(self, before: datetime) -> int: ...

    async def prune_evidence(self, *, before: datetime) -> int: ...


class LeaderActions(Protocol):
    async def expire_overdue(self) -> int: ...

    async def reconcile_interrupted(self, *, orphaned_before: datetime | None = None) -> int: ...


OnChange = Callable[[str | None, bool], None]


class LeaderElector:
    """Acquire, renew and release one Lease as ``identity``."""

    def __init__(
        self,
        leases: LeasePort,
        *,
        identity: str,
        duration_s: int,
        renew_deadline_s: float,
        clock: Callable[[], datetime],
        on_change: OnChange | None = None,
    ) -> None:
        self.leases = leases
        self.identity = identity
        self.duration_s = duration_s
        self.renew_deadline_s = renew_deadline_s
        self.clock = clock
        self.on_change = on_change
        self.is_leader = False
        self.holder: str | None = None
        self._observed: Observation | None = None
        self._renewed_at: datetime | None = None

    def _set(self, leader: bool, holder: str | None) -> None:
        if (leader, holder) != (self.is_leader, self.holder):
            if leader != self.is_leader:
                log.info("%s %s the leader lease", self.identity, "holds" if leader else "lost")
            self.is_leader, self.holder = leader, holder
            if self.on_change is not None:
                self.on_change(holder, leader)

    async def step(self) -> bool:
        """One attempt to acquire or renew; True while this replica leads.

        A leader's attempt is bounded by ``renew_deadline_s`` (client-go's renew context):
        a renewal stuck behind a slow API server ends as a failed one, and a leader whose
        last renewal is older than the deadline steps down before anyone can take over."""
        if not self.is_leader:
            return await self._attempt()
        try:
            async with asyncio.timeout(self.renew_deadline_s):
                await self._attempt()
        except TimeoutError:
            log.warning("leader lease: renewal took longer than %ss", self.renew_deadline_s)
        renewed = self._renewed_at
        if renewed is not None and self.clock() - renewed > timedelta(
            seconds=self.renew_deadline_s
        ):
            self._set(False, None)  # step down before the Lease expires under us
        return self.is_leader

    async def _attempt(self) -> bool:
        now = self.clock()
        try:
            current = await self.leases.read()
            if current is not None:
                self._observed = observe(self._observed, current, now=now)
            decision = decide(
                self._observed if current is not None else None,
                me=self.identity,
                now=now,
                duration_s=self.duration_s,
            )
            if decision.kind == "wait" or decision.record is None:
                self._set(False, current.holder if current else None)
                return False
            if decision.kind == "create":
                written = await self.leases.create(decision.record)
            else:
                written = await self.leases.replace(decision.record)
        except ConflictError:
            # another replica wrote first (409): it won this round; re-read next time
            self._set(False, self.holder if self.holder != self.identity else None)
            return False
        except GpunodeError as err:
            log.warning("leader lease: %s", err)
            return self.is_leader
        self._observed = Observation(written, now)
        self._renewed_at = now
        self._set(True, self.identity)
        return True

    async def release(self) -> None:
        """Give the Lease up (clean stop), so another replica takes over at once."""
        if not self.is_leader:
            return
        try:
            current = await self.leases.read()
            mine = released(current, me=self.identity) if current else None
            if mine is not None:
                await self.leases.replace(mine)
        except GpunodeError as err:  # it expires by itself within a lease duration
            log.warning("could not release the leader lease: %s", err)
        self._set(False, None)


@dataclass
class LeaderWork:
    """The loop each replica runs: say it is alive, elect, and (leader) do the sweeps."""

    store: LeaderWorkStore
    actions: LeaderActions
    replica_id: str
    clock: Callable[[], datetime]
    #: None: no Lease configured, this replica always leads (and reconciles at start)
    elector: LeaderElector | None = None
    retry_s: float = 2.0
    approval_sweep_s: float = 60.0
    reconcile_s: float = 10.0
    #: how long a claimer may be silent before its actions count as interrupted
    orphan_after_s: float = 15.0
    on_change: OnChange | None = None
    #: full evidence kept this long, then only the diagnosis (None: kept forever)
    evidence_keep: timedelta | None = None

    def __post_init__(self) -> None:
        self.leading = False
        self._last: dict[str, float] = {}
        self._task: asyncio.Task[None] | None = None
        self._stopped = False

    async def start(self) -> None:
        """Before serving: say this replica is alive; alone, reconcile at once."""
        await self.store.beat(self.replica_id, at=self.clock())
        if self.elector is None:
            # only the actions of claimers silent for a while: another replica on the same
            # store (refused by `serve`, but a second process can still run) keeps its own
            await self._reconcile()
            self.leading = True
            self._last["reconcile"] = asyncio.get_running_loop().time()
            if self.on_change is not None:
                self.on_change(self.replica_id, True)

    async def tick(self) -> None:
        """One round: heartbeat, election, and the leader's work that is due."""
        now = self.clock()
        try:
            await self.store.beat(self.replica_id, at=now)
        except GpunodeError as err:
            log.warning("heartbeat: %s", err)
        was = self.leading
        self.leading = await self.elector.step() if self.elector is not None else True
        if not self.leading:
            return
        if not was:
            self._last.pop("reconcile", None)  # a new leader reconciles at once
        await self._due("reconcile", self.reconcile_s, self._reconcile)
        await self._due("approvals", self.approval_sweep_s, self.actions.expire_overdue)
        await self._due("dedupe", 3600.0, self._forget_old_events)
        if self.evidence_keep is not None:
            await self._due("evidence", 3600.0, self._prune_evidence)

    async def _due(self, name: str, every_s: float, work: Callable[[], Awaitable[object]]) -> None:
        loop_now = asyncio.get_running_loop().time()
        last = self._last.get(name)
        if last is not None and loop_now - last < every_s:
            return
        self._last[name] = loop_now
        try:
            await work()
        except Exception:
            log.exception("leader work %s failed", name)

    async def _reconcile(self) -> int:
        before = self.clock() - timedelta(seconds=self.orphan_after_s)
        return await self.actions.reconcile_interrupted(orphaned_before=before)

    async def _prune_evidence(self) -> int:
        assert self.evidence_keep is not None
        return await self.store.prune_evidence(before=self.clock() - self.evidence_keep)

    async def _forget_old_events(self) -> int:
        return await self.store.forget_events_before(self.clock() - DEDUPE_KEEP)

    async def run(self) -> None:
        while True:
            try:
                await self.tick()
            except Exception:
                log.exception("leader loop failed; retrying")
            await asyncio.sleep(self.retry_s)

    async def stop(self) -> None:
        """Stop the loop (no leader work after this returns) and give the Lease up; once."""
        if self._stopped:
            return
        self._stopped = True
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        if self.elector is not None:
            await self.elector.release()
        self.leading = False

    def context(self) -> Callable[[object], AsyncIterator[None]]:
        """An aiohttp cleanup context: the loop runs while the server runs, the Lease is
        released when it stops."""

        async def ctx(_: object) -> AsyncIterator[None]:
            self._task = asyncio.create_task(self.run(), name="leader-work")
            yield
            await self.stop()

        return ctx
