"""``gpunode doctor``: what the bot may do, next to what it needs, in a table an admin reads.

Checks, each a row (``ok``, ``warn`` or ``FAIL``):
- the token's rules (SelfSubjectRulesReview, cluster-wide and in the bot's namespace) against
  the calls of the collector mode in use (``api_calls``: no Job rights in daemonset mode):
  each missing grant (FAIL) and each extra one (warn), by name;
- the admission policies and their bindings (a missing one: FAIL);
- the collector Job, created with ``dryRun=All`` on one GPU node: admitted or not (FAIL);
  in daemonset mode, the node's agent pod, found as a diagnosis finds it (FAIL: none);
- the store's roles (``bot.store.roles``): an app role that may only append to the audit
  (PostgreSQL), a file writable by its owner only (SQLite); and the audit key;
- replicas: two replicas on one store need a Lease (FAIL: ``serve`` refuses to start).

The exit status is non-zero when any row is FAIL. ``serve`` runs the same checks at start
and logs each row.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Literal

from bot.config import Settings
from bot.errors import GpunodeError, StoreError, UsageError
from bot.kube import selfcheck
from bot.kube.permissions import api_calls
from bot.store import Store, engines, roles
from bot.store.db import DbError

Level = Literal["ok", "warn", "FAIL"]
#: a replica that beat within this long may be alive; then it must beat again within
#: ``SETTLE_S`` (replicas beat every ``LeaderWork.retry_s``, 2 s) to count
REPLICA_ALIVE_S = 60
SETTLE_S = 5.0


@dataclass(frozen=True)
class Row:
    area: str
    level: Level
    what: str
    detail: str = ""


def _rows_for_grants(
    cluster: dict[str, Any],
    own: dict[str, Any],
    namespace: str,
    *,
    lease: bool,
    collector_mode: str = "job",
) -> list[Row]:
    rows: list[Row] = []
    for status, where in ((cluster, "cluster-wide"), (own, f"namespace {namespace}")):
        if status.get("incomplete"):
            rows.append(
                Row(
                    "grants",
                    "warn",
                    f"the rules review ({where}) is incomplete",
                    str(status.get("evaluationError") or "no reason given"),
                )
            )
    cluster_rules = list(cluster.get("resourceRules") or [])
    own_rules = list(own.get("resourceRules") or [])
    calls = api_calls(collector_mode)
    missing = selfcheck.missing_grants(cluster_rules, own_rules, calls)
    for call in missing:
        grant = selfcheck.Grant(call.api_group, call.resource, call.verb, call.scope)
        rows.append(Row("grants", "FAIL", f"missing: {grant.label()}", "the bot needs it"))
    also = selfcheck.LEASE_CALLS if lease else ()
    for grant in selfcheck.extra_grants(cluster_rules, own_rules, also, calls):
        rows.append(Row("grants", "warn", f"extra: {grant.label()}", "no call of the bot needs it"))
    if not missing:
        rows.append(
            Row("grants", "ok", f"all {len(calls)} calls the bot makes ({collector_mode} mode)")
        )
    return rows


def _rows_for_policies(policies: list[Any], bindings: list[Any]) -> list[Row]:
    names = {str((p.get("metadata") or {}).get("name")) for p in policies}
    bound = {str((b.get("spec") or {}).get("policyName")) for b in bindings}
    rows = []
    for name in selfcheck.REQUIRED_POLICIES:
        if name not in names:
            rows.append(Row("admission", "FAIL", f"policy {name} is not installed"))
        elif name not in bound:
            rows.append(Row("admission", "FAIL", f"policy {name} is installed but not bound"))
        else:
            rows.append(Row("admission", "ok", f"policy {name} installed and bound"))
    return rows


async def check_cluster(
    gateway: Any, namespace: str, *, lease: bool = False, collector_mode: str = "job"
) -> list[Row]:
    """The rows about the cluster: grants, admission policies, the collector Job (or, in
    daemonset ``collector_mode``, the agent). ``lease``: leader election is configured (its
    Lease rights are needed, not extra)."""
    rows: list[Row] = []
    try:
        cluster = await gateway.rules_review(selfcheck.CLUSTER_PROBE_NAMESPACE)
        own = await gateway.rules_review(namespace)
        rows += _rows_for_grants(
            cluster, own, namespace, lease=lease, collector_mode=collector_mode
        )
    except GpunodeError as exc:
        rows.append(Row("grants", "FAIL", "cannot review the token's rules", exc.message))
    try:
        rows += _rows_for_policies(*await gateway.admission_policies())
    except GpunodeError as exc:
        rows.append(Row("admission", "FAIL", "cannot list the admission policies", exc.message))
    agent = collector_mode == "daemonset"
    subject = "the collector agent" if agent else "the collector Job"
    try:
        nodes = await gateway.list_gpu_nodes()
        if not nodes:
            rows.append(Row("collector", "warn", f"no GPU node to check {subject} on"))
        else:
            await gateway.dry_run_collector(nodes[0].name)
            what, how = (
                ("the collector agent runs", "found on")
                if agent
                else ("the collector Job is admitted", "dry run on")
            )
            rows.append(Row("collector", "ok", what, f"{how} {nodes[0].name}"))
    except GpunodeError as exc:
        failure = (
            "the collector agent is not found" if agent else "the collector Job is not admitted"
        )
        rows.append(Row("collector", "FAIL", failure, exc.message))
    return rows


def _store_rows(target: str) -> list[Row]:
    db = engines.connect(target, migrate=False)
    try:
        path = getattr(db, "path", "")
        return [
            Row(
                "store",
                "ok" if f.ok else ("FAIL" if db.dialect.name == "postgres" else "warn"),
                f.what,
                f.detail,
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
        rows = [Row("store", "FAIL", "cannot read the store's roles", str(exc))]
    if settings.store.audit_key is None:
        rows.append(
            Row(
                "store",
                "warn",
                "audit rows are not signed",
                "set store.audit_key: a row forged with a correct hash passes --verify without it",
            )
        )
    else:
        rows.append(Row("store", "ok", "audit rows are signed (store.audit_key)"))
    lease = settings.leader.lease_name
    if lease:
        rows.append(Row("replicas", "ok", f"leader elected with Lease {lease}"))
        return rows
    async with await Store.open(target) as store:
        alive = await live_replicas(store, clock, settle_s)
    if len(alive) >= (1 if starting else 2):
        rows.append(
            Row(
                "replicas",
                "FAIL",
                "replicas share this store without a Lease",
                f"{', '.join(alive)} alive: set leader.lease_name (each replica would mark "
                "the other's running actions interrupted)",
            )
        )
    elif engines.is_postgres(target):
        rows.append(
            Row(
                "replicas",
                "warn",
                "no Lease configured",
                "a PostgreSQL store is for several replicas: set leader.lease_name before "
                "running a second one",
            )
        )
    else:
        rows.append(Row("replicas", "ok", "one replica on this store"))
    return rows


def table(rows: list[Row]) -> str:
    """A plain table: status, area, what, detail."""
    head = ("STATUS", "AREA", "CHECK", "DETAIL")
    cells = [head, *((r.level, r.area, r.what, r.detail) for r in rows)]
    widths = [max(len(c[i]) for c in cells) for i in range(3)]
    return "\n".join(
        "  ".join([*(c[i].ljust(widths[i]) for i in range(3)), c[3]]).rstrip() for c in cells
    )


def failed(rows: list[Row]) -> bool:
    return any(r.level == "FAIL" for r in rows)


def log_rows(rows: list[Row], logger: logging.Logger) -> None:
    for r in rows:
        level = {"ok": logging.INFO, "warn": logging.WARNING}.get(r.level, logging.ERROR)
        logger.log(
            level,
            "doctor: %s %s: %s%s",
            r.level,
            r.area,
            r.what,
            f" ({r.detail})" if r.detail else "",
        )


async def at_start(
    settings: Settings,
    gateway: Any,
    *,
    clock: Callable[[], datetime],
    logger: logging.Logger,
    settle_s: float = SETTLE_S,
) -> list[Row]:
    """What ``serve`` runs before taking traffic: every check, logged; a store shared with a
    live replica and no Lease raises (the bot refuses to start)."""
    rows = await check_cluster(
        gateway,
        settings.kube.namespace,
        lease=bool(settings.leader.lease_name),
        collector_mode=settings.kube.collector_mode,
    )
    try:
        rows += await check_store(settings, clock=clock, starting=True, settle_s=settle_s)
    except StoreError as exc:  # a first start: the store does not exist yet
        rows.append(Row("store", "ok", "a new store", exc.message))
    log_rows(rows, logger)
    shared = [r for r in rows if r.area == "replicas" and r.level == "FAIL"]
    if shared:
        raise UsageError(f"refusing to start: {shared[0].what}: {shared[0].detail}")
    return rows
