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
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any, TextIO

from bot.cli.common import cli_settings, store_target
from bot.core.model.durations import parse_duration
from bot.core.reporting.records import ChainReport
from bot.errors import UsageError
from bot.render.cli_text import line
from bot.render.filters import display_width, pad
from bot.render.timeline import stale_reason
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


def _row(
    record: AuditRecord, locale: str, stale: Mapping[str, Mapping[str, Any]]
) -> tuple[str, ...]:
    return tuple(
        escape(cell)
        for cell in (
            line("audit_at", record.at, locale=locale),
            record.actor,
            record.action + (line("audit_tier", record.tier, locale=locale) if record.tier else ""),
            record.decision,
            record.outcome,
            record.cluster or "-",
            record.incident_id or "-",
            record.channel or "-",
            _detail(record, locale, stale),
        )
    )


def _detail(record: AuditRecord, locale: str, stale: Mapping[str, Mapping[str, Any]]) -> str:
    """The row's detail: a plan refused as stale is worded in ``locale`` from the reason its
    action stored (code and params); any other detail as stored (a person's reason, or words
    an older version wrote)."""
    why = stale.get(record.action_id or "") if _is_stale(record) else None
    return stale_reason(why, locale=locale) if why else record.detail


def _is_stale(record: AuditRecord) -> bool:
    return record.decision == "refused" and record.outcome == "stale"


def format_text(
    records: list[AuditRecord],
    *,
    locale: str,
    stale: Mapping[str, Mapping[str, Any]] | None = None,
) -> str:
    """A plain table in ``locale`` (heads, times, stale reasons), widths fitted to the
    content by display columns; ``detail`` is last and not padded. ``stale``: action id ->
    the reason its refusal stored (``reason`` and its params)."""
    if not records:
        return line("no_audit_records", locale=locale)
    heads = tuple(line("audit_head", c, locale=locale) for c in _COLUMNS)
    rows = [heads, *(_row(r, locale, stale or {}) for r in records)]
    widths = [max(display_width(row[i]) for row in rows) for i in range(len(_COLUMNS) - 1)]
    lines = []
    for row in rows:
        cells = [pad(cell, widths[i]) for i, cell in enumerate(row[:-1])]
        lines.append("  ".join([*cells, row[-1]]).rstrip())
    return "\n".join(lines)


def format_json_lines(records: list[AuditRecord]) -> str:
    return "\n".join(json.dumps(r.model_dump(mode="json"), sort_keys=True) for r in records)


async def _read(
    path: str, since: datetime | None
) -> tuple[list[AuditRecord], dict[str, dict[str, Any]]]:
    """The rows since ``since``, and for each plan refused as stale the reason its action
    stored (``reason`` and params: the words are the reader's, the record keeps codes)."""
    async with await Store.open(path) as store:
        records = await store.audit_since(since)
        stale: dict[str, dict[str, Any]] = {}
        for r in records:
            if _is_stale(r) and r.action_id and r.action_id not in stale:
                action = await store.get_action(r.action_id)
                result = action.result if action is not None else None
                if isinstance(result, dict) and isinstance(result.get("code"), str):
                    stale[r.action_id] = {**(result.get("params") or {}), "reason": result["code"]}
        return records, stale


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


def anchors_text(report: AnchorReport, *, locale: str) -> str:
    """What ``--anchors`` found, in ``locale`` (a broken anchor's problem as the check wrote it)."""
    return line("audit_anchors", report, locale=locale)


def verify_text(report: ChainReport, *, keyed: bool = True, locale: str) -> str:
    """What ``--verify`` found, in ``locale`` (a broken row's problem as the check wrote it)."""
    return line("audit_verified", report, keyed, locale=locale)


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
        locale = getattr(args, "lang", None) or "en"
        print(verify_text(report, keyed=key is not None, locale=locale), file=stream)
        ok = report.ok
        if getattr(args, "anchors", False):
            deployment = settings.store.anchor_deployment
            anchored = asyncio.run(_check_anchors(path, args, deployment))
            print(anchors_text(anchored, locale=locale), file=stream)
            ok = ok and anchored.ok
        return 0 if ok else 1
    since = None
    if getattr(args, "since", None):
        since = (now or datetime.now(UTC)) - parse_duration(args.since)
    records, stale = asyncio.run(_read(path, since))
    locale = getattr(args, "lang", None) or "en"
    text = (
        format_json_lines(records)
        if args.format == "json"
        else format_text(records, locale=locale, stale=stale)
    )
    if text:
        print(text, file=stream)
    return 0
