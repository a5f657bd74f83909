"""``gpunode doctor``: what the bot may do, next to what it needs, in a table an admin reads.

Checks, each a row (``ok``, ``warn`` or ``FAIL``):
- the token's rules (SelfSubjectRulesReview, cluster-wide and in the bot's namespace) against
  the calls of the collector mode in use (``api_calls``: no Job rights in daemonset mode):
  each missing grant (FAIL) and each extra one (warn), by name;
- the admission policies and their bindings (a missing one: FAIL);
- the collector Job, created with ``dryRun=All`` on one GPU node: admitted or not (FAIL);
  in daemonset mode, the node's agent pod, found as a diagnosis finds it (FAIL: none);
- the store's rows come from ``bot.store.checkup`` (its roles, the audit key, replicas
  without a Lease), handed in by the edge (``bot.cli.doctor``, ``bot.wiring.serve``): this
  module reads neither the configuration nor the store.

The exit status is non-zero when any row (``bot.core.reporting.checkup.Row``) is FAIL. ``serve``
runs the same checks at start and logs each row; two replicas on one store without a Lease
refuse to start.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any

from bot.core.reporting.checkup import Level, Row, failed
from bot.errors import GpunodeError, StoreError, UsageError
from bot.kube import selfcheck
from bot.kube.permissions import api_calls

__all__ = ["Level", "Row", "at_start", "check_cluster", "failed", "log_rows", "table"]


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


def table(rows: list[Row]) -> str:
    """A plain table: status, area, what, detail."""
    head = ("STATUS", "AREA", "CHECK", "DETAIL")
    cells = [head, *((r.level, r.area, r.what, r.detail) for r in rows)]
    widths = [max(len(c[i]) for c in cells) for i in range(3)]
    return "\n".join(
        "  ".join([*(c[i].ljust(widths[i]) for i in range(3)), c[3]]).rstrip() for c in cells
    )


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
    gateway: Any,
    *,
    namespace: str,
    lease_name: str | None,
    collector_mode: str,
    store_rows: Callable[[], Awaitable[list[Row]]],
    logger: logging.Logger,
) -> list[Row]:
    """What ``serve`` runs before taking traffic: every check, logged; a store shared with a
    live replica and no Lease raises (the bot refuses to start). ``store_rows``: the store's
    checks as a replica about to serve asks them (``bot.store.checkup.check_store`` with
    ``starting=True``)."""
    rows = await check_cluster(
        gateway, namespace, lease=bool(lease_name), collector_mode=collector_mode
    )
    try:
        rows += await store_rows()
    except StoreError as exc:  # a first start: the store does not exist yet
        rows.append(Row("store", "ok", "a new store", exc.message))
    log_rows(rows, logger)
    shared = [r for r in rows if r.area == "replicas" and r.level == "FAIL"]
    if shared:
        raise UsageError(f"refusing to start: {shared[0].what}: {shared[0].detail}")
    return rows
