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
import unicodedata
from datetime import UTC, datetime
from typing import TextIO

from bot.cli.common import cli_settings, store_target
from bot.core.model.durations import parse_duration
from bot.core.reporting.records import ChainReport
from bot.errors import UsageError
from bot.services import anchoring
from bot.services.anchoring import AnchorReport
from bot.store import AuditRecord, Store

_COLUMNS = (
    "at",
    "actor",
    "action",
    "decision",
    "outcome",
    "cluster",
    "incident",
    "channel",
    "detail",
)


def escape(text: str) -> str:
    """``text`` fit for one terminal line: newlines, tabs, ANSI escapes and every other
    control or line-breaking character written as a visible escape (``\\n``, ``\\x1b``,
    ``\\u2028``), and the backslash doubled, so a field can neither start a line that looks
    like a row nor drive the admin's terminal."""
    out = []
    for ch in text:
        if ch == "\\":
            out.append("\\\\")
        elif ch in _NAMED:
            out.append(_NAMED[ch])
        elif unicodedata.category(ch) in _UNSAFE:
            code = ord(ch)
            out.append(
                f"\\x{code:02x}"
                if code < 0x100
                else f"\\u{code:04x}"
                if code < 0x10000
                else f"\\U{code:08x}"
            )
        else:
            out.append(ch)
    return "".join(out)


_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}
#: control, format (bidi overrides), line and paragraph separators, unassigned, surrogates
_UNSAFE = {"Cc", "Cf", "Zl", "Zp", "Cn", "Cs", "Co"}


def _row(record: AuditRecord) -> tuple[str, ...]:
    return tuple(
        escape(cell)
        for cell in (
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


async def _verify(path: str, key: bytes | None) -> ChainReport:
    async with await Store.open(path) as store:
        store.audit_key = key
        return await store.verify_audit()


async def _check_anchors(path: str, args: argparse.Namespace, deployment: str) -> AnchorReport:
    """The anchors the bot posted as Events on its Deployment (in the default cluster),
    compared with the store."""
    from bot.cli.common import registry_from_args
    from bot.kube.gateway import Gateway

    registry = registry_from_args(args)
    home = registry.port(registry.default)
    if not isinstance(home, Gateway):
        raise UsageError("--anchors reads the anchors from a Kubernetes cluster")
    try:
        anchors = await home.audit_anchors(deployment)
    finally:
        home.close()
    async with await Store.open(path) as store:
        return await anchoring.check(store, anchors)


def anchors_text(report: AnchorReport) -> str:
    if report.ok:
        if not report.checked:
            return "anchors: none found (the Events expired or none was posted yet): not checked"
        return f"anchors: {report.checked} anchored heads match the log"
    return f"anchors BROKEN: {report.problem}"


def verify_text(report: ChainReport, *, keyed: bool = True) -> str:
    if report.ok:
        signed = (
            f"; {report.signed} signed rows match the audit key"
            if report.signed
            else (
                "; no row is signed" if keyed else "; signatures not checked (no store.audit_key)"
            )
        )
        return f"audit chain intact: {report.rows} rows verified{signed}"
    if report.bad_id is None:
        return f"audit chain BROKEN: {report.problem}"
    return (
        f"audit chain BROKEN at row {report.bad_id}: {report.problem} "
        f"({report.rows} rows before it verified)"
    )


def main(
    args: argparse.Namespace, *, now: datetime | None = None, out: TextIO | None = None
) -> int:
    """Entry point of ``gpunode audit``; ``now`` and ``out`` are for tests."""
    settings = cli_settings(args)  # the settings' store, or the demo's
    path = store_target(args)
    stream = out or sys.stdout
    if getattr(args, "verify", False):
        key = settings.store.audit_key_bytes
        report = asyncio.run(_verify(path, key))
        print(verify_text(report, keyed=key is not None), file=stream)
        ok = report.ok
        if getattr(args, "anchors", False):
            deployment = settings.store.anchor_deployment
            anchored = asyncio.run(_check_anchors(path, args, deployment))
            print(anchors_text(anchored), file=stream)
            ok = ok and anchored.ok
        return 0 if ok else 1
    since = None
    if getattr(args, "since", None):
        since = (now or datetime.now(UTC)) - parse_duration(args.since)
    records = asyncio.run(_read(path, since))
    text = format_json_lines(records) if args.format == "json" else format_text(records)
    if text:
        print(text, file=stream)
    return 0
