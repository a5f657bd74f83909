"""``gpunode audit [--since 4h] [--format text|json] [--verify]``: print or check the audit log.

``--verify`` walks the audit hash chain (``bot.store.audit_chain``) and exits 1 naming the
first row that does not hold (edited, deleted, forged) or the trigger that was dropped.

Reads the store named by the settings (``store.path``), so an admin can review who did what
on the machine (or pod) where the bot keeps its database. JSON output is one object per line
so it pipes into ``jq`` or a log shipper.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from datetime import UTC, datetime
from typing import TextIO

from bot.cli.common import store_target
from bot.core.durations import parse_duration
from bot.store import AuditRecord, Store
from bot.store.models import ChainReport

_COLUMNS = (
    "at", "actor", "action", "decision", "outcome", "cluster", "incident", "channel", "detail",
)  # fmt: skip


def _row(record: AuditRecord) -> tuple[str, ...]:
    return (
        record.at.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S"),
        record.actor,
        record.action + (f" (tier {record.tier})" if record.tier else ""),
        record.decision,
        record.outcome,
        record.cluster or "-",
        record.incident_id or "-",
        record.channel or "-",
        record.detail,
    )


def format_text(records: list[AuditRecord]) -> str:
    """A plain table, widths fitted to the content; ``detail`` is last and not padded."""
    if not records:
        return "no audit records in this period"
    rows = [tuple(c.upper() for c in _COLUMNS), *(_row(r) for r in records)]
    widths = [max(len(row[i]) for row in rows) for i in range(len(_COLUMNS) - 1)]
    lines = []
    for row in rows:
        cells = [cell.ljust(widths[i]) for i, cell in enumerate(row[:-1])]
        lines.append("  ".join([*cells, row[-1]]).rstrip())
    return "\n".join(lines)


def format_json_lines(records: list[AuditRecord]) -> str:
    return "\n".join(json.dumps(r.model_dump(mode="json"), sort_keys=True) for r in records)


async def _read(path: str, since: datetime | None) -> list[AuditRecord]:
    async with await Store.open(path) as store:
        return await store.audit_since(since)


async def _verify(path: str) -> ChainReport:
    async with await Store.open(path) as store:
        return await store.verify_audit()


def verify_text(report: ChainReport) -> str:
    if report.ok:
        return f"audit chain intact: {report.rows} rows verified"
    where = f"row {report.bad_id}" if report.bad_id is not None else "the audit table"
    return (
        f"audit chain BROKEN at {where}: {report.problem} ({report.rows} rows before it verified)"
    )


def main(
    args: argparse.Namespace, *, now: datetime | None = None, out: TextIO | None = None
) -> int:
    """Entry point of ``gpunode audit``; ``now`` and ``out`` are for tests."""
    path = store_target(args)  # the settings' store, or the demo's
    stream = out or sys.stdout
    if getattr(args, "verify", False):
        report = asyncio.run(_verify(path))
        print(verify_text(report), file=stream)
        return 0 if report.ok else 1
    since = None
    if getattr(args, "since", None):
        since = (now or datetime.now(UTC)) - parse_duration(args.since)
    records = asyncio.run(_read(path, since))
    text = format_json_lines(records) if args.format == "json" else format_text(records)
    if text:
        print(text, file=stream)
    return 0
