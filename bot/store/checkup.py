"""The store's checkup rows (``gpunode doctor``, and ``serve`` at start): its roles
(``bot.store.roles``: an app role that may only append to the audit on PostgreSQL, a file
writable by its owner only on SQLite), the audit key, and replicas sharing it without a
Lease (FAIL: ``serve`` refuses to start)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import datetime, timedelta

from bot.config import Settings
from bot.core.reporting.checkup import Row
from bot.store import engines, roles
from bot.store.db import DbError
from bot.store.storing import Store

#: a replica that beat within this long may be alive; then it must beat again within
#: ``SETTLE_S`` (replicas beat every ``LeaderWork.retry_s``, 2 s) to count
REPLICA_ALIVE_S = 60
SETTLE_S = 5.0


def _store_rows(target: str) -> list[Row]:
    db = engines.connect(target, migrate=False)
    try:
        path = getattr(db, "path", "")
        return [
            Row(
                "store",
                "ok" if f.ok else ("FAIL" if db.dialect.name == "postgres" else "warn"),
                f.code,
                {**f.params, "check": f.check},
            )
            for f in roles.check(db, path)
        ]
    finally:
        db.close()


async def live_replicas(store: Store, clock: Callable[[], datetime], settle_s: float) -> list[str]:
    """Replicas beating now: seen in the last ``REPLICA_ALIVE_S``, then again after waiting
    ``settle_s`` (a replica that stopped, e.g. this pod before its restart, beats no more)."""
    recent = await store.live_replicas(clock() - timedelta(seconds=REPLICA_ALIVE_S))
    if not recent:
        return []
    start = clock()
    await asyncio.sleep(settle_s)
    return await store.live_replicas(start)


async def check_store(
    settings: Settings,
    *,
    clock: Callable[[], datetime],
    starting: bool = False,
    settle_s: float = SETTLE_S,
) -> list[Row]:
    """The rows about the store: roles, the audit key, replicas without a Lease.
    ``starting``: asked by a replica about to serve (any live replica is another one); else
    by an admin's ``gpunode doctor`` (two live replicas share the store)."""
    target = engines.require_existing(settings.store.target)
    try:
        rows = await asyncio.to_thread(_store_rows, target)
    except DbError as exc:
        rows = [Row("store", "FAIL", "store_unreadable", {"reason": str(exc)})]
    if settings.store.audit_key is None:
        rows.append(Row("store", "warn", "audit_unsigned"))
    else:
        rows.append(Row("store", "ok", "audit_signed"))
    lease = settings.leader.lease_name
    if lease:
        rows.append(Row("replicas", "ok", "lease", {"lease": lease}))
        return rows
    async with await Store.open(target) as store:
        alive = await live_replicas(store, clock, settle_s)
    if len(alive) >= (1 if starting else 2):
        rows.append(Row("replicas", "FAIL", "replicas_shared", {"replicas": alive}))
    elif engines.is_postgres(target):
        rows.append(Row("replicas", "warn", "no_lease"))
    else:
        rows.append(Row("replicas", "ok", "one_replica"))
    return rows
