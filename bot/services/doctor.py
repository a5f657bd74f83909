"""``gpunode doctor``: what the bot may do, next to what it needs, in a table an admin reads.

Checks, each a row (``ok``, ``warn`` or ``FAIL``):
- the token's rules (SelfSubjectRulesReview, cluster-wide and in the bot's namespace) against
  the calls of the collector mode in use (``api_calls``: no Job rights in daemonset mode):
  each missing grant (FAIL) and each extra one (warn), by name;
- the admission policies and their bindings (a missing one: FAIL);
- the collector Job, created with ``dryRun=All`` on one GPU node: admitted or not (FAIL);
  in daemonset mode, the node's agent pod, found as a diagnosis finds it (FAIL: none);
- the store's rows come from ``bot.store.checkup`` (its roles, the audit key, replicas
  without a Lease), handed in by the edge (``bot.cli.doctor``, ``bot.wiring.running``): this
  module reads neither the configuration nor the store.

Each row (``bot.core.reporting.checkup.Row``) says what was found as a code and raw params;
the edge words them (``bot.render.checkup``: the table in ``--lang``, the English log lines).
The exit status is non-zero when any row is FAIL. ``serve`` runs the same checks at start and
logs each row; two replicas on one store without a Lease refuse to start.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any

from bot.core.reporting.checkup import Level, Row, failed
from bot.errors import ConfigError, GpunodeError, StoreError
from bot.kube import selfcheck
from bot.kube.permissions import api_calls

__all__ = [
    "Level",
    "Row",
    "at_start",
    "check_cluster",
    "failed",
    "log_rows",
    "refusal_to_start",
]


def _rows_for_grants(
    cluster: dict[str, Any],
    own: dict[str, Any],
    namespace: str,
    *,
    lease: bool,
    collector_mode: str = "job",
) -> list[Row]:
    rows: list[Row] = []
    for status, where in ((cluster, None), (own, namespace)):
        if status.get("incomplete"):
            reason = str(status.get("evaluationError") or "")
            rows.append(
                Row("grants", "warn", "review_incomplete", {"namespace": where, "reason": reason})
            )
    cluster_rules = list(cluster.get("resourceRules") or [])
    own_rules = list(own.get("resourceRules") or [])
    calls = api_calls(collector_mode)
    missing = selfcheck.missing_grants(cluster_rules, own_rules, calls)
    for call in missing:
        grant = selfcheck.Grant(call.api_group, call.resource, call.verb, call.scope)
        rows.append(Row("grants", "FAIL", "grant_missing", grant._asdict()))
    also = selfcheck.LEASE_CALLS if lease else ()
    for grant in selfcheck.extra_grants(cluster_rules, own_rules, also, calls):
        rows.append(Row("grants", "warn", "grant_extra", grant._asdict()))
    if not missing:
        rows.append(Row("grants", "ok", "grants_ok", {"calls": len(calls), "mode": collector_mode}))
    return rows


def _rows_for_policies(policies: list[Any], bindings: list[Any]) -> list[Row]:
    names = {str((p.get("metadata") or {}).get("name")) for p in policies}
    bound = {str((b.get("spec") or {}).get("policyName")) for b in bindings}
    rows = []
    for name in selfcheck.REQUIRED_POLICIES:
        if name not in names:
            rows.append(Row("admission", "FAIL", "policy_missing", {"policy": name}))
        elif name not in bound:
            rows.append(Row("admission", "FAIL", "policy_unbound", {"policy": name}))
        else:
            rows.append(Row("admission", "ok", "policy_ok", {"policy": name}))
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
        rows.append(Row("grants", "FAIL", "review_failed", {"reason": exc.message}))
    try:
        rows += _rows_for_policies(*await gateway.admission_policies())
    except GpunodeError as exc:
        rows.append(Row("admission", "FAIL", "policies_unreadable", {"reason": exc.message}))
    agent = collector_mode == "daemonset"
    try:
        nodes = await gateway.list_gpu_nodes()
        if not nodes:
            rows.append(Row("collector", "warn", "no_gpu_node", {"agent": agent}))
        else:
            await gateway.dry_run_collector(nodes[0].name)
            rows.append(
                Row("collector", "ok", "collector_ok", {"agent": agent, "node": nodes[0].name})
            )
    except GpunodeError as exc:
        rows.append(
            Row("collector", "FAIL", "collector_failed", {"agent": agent, "reason": exc.message})
        )
    return rows


def _codes(row: Row) -> str:
    """A row without words: its level, area, code and params (no presenter handed in)."""
    return f"{row.level} {row.area}: {row.code} {dict(row.params)}"


def log_rows(
    rows: list[Row], logger: logging.Logger, describe: Callable[[Row], str] = _codes
) -> None:
    """Each row logged at its level (ok: INFO, warn: WARNING, FAIL: ERROR), as ``describe``
    words it (``serve``: ``bot.render.checkup.log_line``, English)."""
    for r in rows:
        level = {"ok": logging.INFO, "warn": logging.WARNING}.get(r.level, logging.ERROR)
        logger.log(level, "doctor: %s", describe(r))


async def at_start(
    gateway: Any,
    *,
    namespace: str,
    lease_name: str | None,
    collector_mode: str,
    store_rows: Callable[[], Awaitable[list[Row]]],
    logger: logging.Logger,
    describe: Callable[[Row], str] = _codes,
) -> list[Row]:
    """What ``serve`` runs before taking traffic: every check, logged; a store shared with a
    live replica and no Lease raises (the bot refuses to start). ``store_rows``: the store's
    checks as a replica about to serve asks them (``bot.store.checkup.check_store`` with
    ``starting=True``); ``describe``: a row's words for the log (the edge's presenter)."""
    rows = await check_cluster(
        gateway, namespace, lease=bool(lease_name), collector_mode=collector_mode
    )
    try:
        rows += await store_rows()
    except StoreError as exc:  # a first start: the store does not exist yet
        rows.append(Row("store", "ok", "store_new", {"reason": exc.message}))
    log_rows(rows, logger, describe)
    refusal = refusal_to_start(rows)
    if refusal is not None:
        raise refusal
    return rows


def refusal_to_start(rows: list[Row]) -> ConfigError | None:
    """``serve``'s refusal to start when ``rows`` say that live replicas share the store
    without a Lease (each would mark the other's running actions interrupted): keyed
    ``replicas_shared`` with the live replicas' names, so the terminal words it in
    ``--lang``; its English text is the log's. None when nothing forbids starting."""
    shared = [r for r in rows if r.area == "replicas" and r.level == "FAIL"]
    if not shared:
        return None
    found = shared[0].params.get("replicas")
    replicas = [str(r) for r in found] if isinstance(found, list) else []
    return ConfigError(
        "refusing to start: replicas share this store without a Lease: "
        f"{', '.join(replicas)} alive: set leader.lease_name (each replica would mark the "
        "other's running actions interrupted)",
        code="replicas_shared",
        key="replicas_shared",
        params={"replicas": replicas},
    )
