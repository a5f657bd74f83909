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
import re
import sys
import unicodedata
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any, TextIO

from bot.cli.common import cli_settings, store_target
from bot.core.model.durations import parse_duration
from bot.core.reporting.records import ChainReport
from bot.errors import UsageError
from bot.render.cli_text import line
from bot.render.errors import error_text
from bot.render.filters import columns
from bot.render.notices import refusal_text
from bot.render.timeline import entry_text, found_text, stale_reason, unanswered_text
from bot.services import anchoring
from bot.services.anchoring import AnchorReport
from bot.store import ActionRecord, AuditRecord, Store

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
    record: AuditRecord, locale: str, results: Mapping[str, Mapping[str, Any]]
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
            _detail(record, locale, results.get(record.action_id or "") or {}),
        )
    )


def _detail(record: AuditRecord, locale: str, result: Mapping[str, Any]) -> str:
    """The row's detail in ``locale``. A row that keeps its detail's code is worded from
    the code and its parameters, in every language: a refusal or a policy denial with the
    words the Slack refusal has, the details only the audit says (``_AUDIT_WORDS``) with
    its own. Rows without one (written before codes were kept, or whose detail has none):

    - a plan refused as stale is worded from the reason its action stored (code and params);
    - a detail the services write as a fixed English sentence is worded from the row's
      decision and outcome, the action's stored result (``said``: a crash, what an
      interrupted action's reconciler found; ``unanswered``: the writes that got no answer)
      or the values the sentence holds, and only when those data, worded in English, give
      the stored detail word for word;
    - anything else (a person's reason, a server's message, a denial that names roles or
      clusters, words an older version wrote) is shown as stored: English sentences are
      never parsed for the parameters they hold."""
    if record.detail_code:
        return _coded(record.detail_code, record.detail_params, locale)
    if _is_stale(record):
        code = result.get("code")
        if not isinstance(code, str):
            return record.detail
        return stale_reason({**(result.get("params") or {}), "reason": code}, locale=locale)
    if locale == "en" or not record.detail:
        return record.detail
    for words in _sentences(record, result):
        if words("en") == record.detail:
            return words(locale)
    return record.detail


#: codes the audit words itself (``cli.txt.j2``), and the parameters those words need:
#: refusals whose row names more than the chat refusal says (the plan, the approval
#: request); the alerts gpunode refused (no chat refusal: Alertmanager asked), for nodes
#: no cluster has or for a label it could not use; an approval asked for and one that
#: expired; a prevention kit shared
_AUDIT_WORDS: dict[str, tuple[str, tuple[str, ...]]] = {
    "plan_not_current": ("audit_not_current", ("plan",)),
    "approval_unknown": ("audit_approval_unknown", ("approval",)),
    "unknown_nodes": ("audit_unknown_nodes", ("nodes",)),
    "alert_label_refused": ("audit_alert_refused", ("node", "error")),
    "approval_quorum": ("audit_quorum", ("quorum", "expires")),
    "approval_expired": ("audit_expired", ()),
    "kit_shared": ("audit_kit_shared", ("snapshot", "files")),
}


def _coded(code: str, params: Mapping[str, Any], locale: str) -> str:
    """A detail kept as a code and its parameters, in ``locale``: the audit's own words
    where it has them and the parameters hold what they name, else the refusal's. An error
    it quotes (``error_key``/``error_params`` beside its English ``error``) is worded by
    its key, in English its own text."""
    own = _AUDIT_WORDS.get(code)
    if own is None or not all(k in params for k in own[1]):
        return refusal_text(code, params, locale)
    p = dict(params)
    if locale != "en" and p.get("error_key"):
        quoted = p.get("error_params")
        keyed = dict(quoted) if isinstance(quoted, Mapping) else {}
        p["error"] = error_text(str(p["error_key"]), keyed, str(p["error"]), locale)
    return line(own[0], *(_listed(p[k]) for k in own[1]), locale=locale)


def _listed(value: object) -> str:
    """A parameter as the audit's words quote it: a list as its items, comma-separated."""
    if isinstance(value, list):
        return ", ".join(str(v) for v in value)
    return str(value)


Words = Callable[[str], str]
_QUORUM = re.compile(r"quorum (?P<quorum>[0-9]+); expires (?P<expires>\S+)")
_NOT_CURRENT = re.compile(r"plan (?P<plan>\S+) is not a current plan of this incident")
_UNKNOWN_NODES = re.compile(r"no GPU node named (?P<nodes>.+)")
_KIT_SHARED = re.compile(r"snapshot (?P<snapshot>\S+): (?P<files>.*)")


def _sentences(record: AuditRecord, result: Mapping[str, Any]) -> list[Words]:
    """The sentences the row's detail may be, each a function of the locale (the caller
    keeps the one whose English is the stored detail)."""
    decision, outcome, detail = record.decision, record.outcome, record.detail
    stored = result.get("said")
    said: Mapping[str, Any] = stored if isinstance(stored, Mapping) else {}
    given = said.get("params")
    params: Mapping[str, Any] = given if isinstance(given, Mapping) else {}
    unanswered = [u for u in result.get("unanswered") or [] if isinstance(u, Mapping)]
    if (decision, outcome) == ("interrupted", "failed") and said.get("code") == "interrupted":
        return [lambda loc: found_text(params.get("found"), locale=loc)]
    if (decision, outcome) == ("failed", "error") and said.get("code") == "crashed":
        return [lambda loc: entry_text(said, detail, locale=loc)]
    if (decision, outcome) == ("no_answer", "unknown"):
        return [_no_answer(u) for u in unanswered if isinstance(u.get("step"), Mapping)]
    if decision == "reread":
        return [_reread(u) for u in unanswered]
    if decision == "expired":
        return [_line("audit_expired")]
    if decision == "needs_approval" and (m := _QUORUM.fullmatch(detail)):
        return [_line("audit_quorum", m["quorum"], m["expires"])]
    if (decision, outcome) == ("refused", "not_current") and (m := _NOT_CURRENT.fullmatch(detail)):
        return [_line("audit_not_current", m["plan"])]
    if (decision, outcome) == ("refused", "unknown_node") and (
        m := _UNKNOWN_NODES.fullmatch(detail)
    ):
        return [_line("audit_unknown_nodes", m["nodes"])]
    if decision == "shared" and (m := _KIT_SHARED.fullmatch(detail)):
        return [_line("audit_kit_shared", m["snapshot"], m["files"])]
    if decision in ("denied", "refused"):  # the policy's denials without parameters
        return [_refusal(code) for code in _FIXED_DENIALS]
    return []


#: the denials whose English reason is one fixed sentence (the refusal's English words), so
#: a row written before codes were kept is known by its detail alone
_FIXED_DENIALS = ("no_policy", "channel_not_enabled", "identity_unmapped", "no_role_bound")


def _refusal(code: str) -> Words:
    """The refusal ``code`` without parameters, in the locale it is given."""
    return lambda locale: refusal_text(code, {}, locale)


def _line(name: str, *args: str) -> Words:
    """The macro ``name`` of ``cli.txt.j2`` with ``args``, in the locale it is given."""
    return lambda locale: line(name, *args, locale=locale)


def _reread(u: Mapping[str, Any]) -> Words:
    """What the re-read of a write that got no answer found, as the timeline words it."""
    return lambda locale: unanswered_text(u, locale=locale)


def _no_answer(u: Mapping[str, Any]) -> Words:
    """A write that got no answer, as its audit row says it (the error, then the object
    re-read): the error worded from its key, in English its own text."""

    def words(locale: str) -> str:
        error = str(u.get("write_error") or "")
        params = u.get("write_params")
        if locale != "en" and u.get("write_key"):
            keyed = dict(params) if isinstance(params, Mapping) else {}
            error = error_text(str(u["write_key"]), keyed, error, locale)
        step = u["step"]
        return line("audit_no_answer", error, step.get("kind"), step.get("name"), locale=locale)

    return words


def _is_stale(record: AuditRecord) -> bool:
    return record.decision == "refused" and record.outcome == "stale"


def format_text(
    records: list[AuditRecord],
    *,
    locale: str,
    results: Mapping[str, Mapping[str, Any]] | None = None,
) -> str:
    """A plain table in ``locale`` (heads, times, the details gpunode wrote), widths fitted
    to the content by display columns; ``detail`` is last and not padded. ``results``:
    action id -> the result that action stored (``_detail`` words details from it)."""
    if not records:
        return line("no_audit_records", locale=locale)
    heads = tuple(line("audit_head", c, locale=locale) for c in _COLUMNS)
    return columns([heads, *(_row(r, locale, results or {}) for r in records)])


def format_json_lines(records: list[AuditRecord]) -> str:
    return "\n".join(json.dumps(r.model_dump(mode="json"), sort_keys=True) for r in records)


async def _read(
    path: str, since: datetime | None
) -> tuple[list[AuditRecord], dict[str, dict[str, Any]]]:
    """The rows since ``since``, and the result each action a row names stored (a stale
    refusal's reason, a crash, what the reconciler found: the words are the reader's, the
    record keeps codes)."""
    async with await Store.open(path) as store:
        records = await store.audit_since(since)
        results: dict[str, dict[str, Any]] = {}
        # one read per incident, not one per action (a busy period names hundreds)
        for incident in sorted({r.incident_id for r in records if r.action_id and r.incident_id}):
            for action in await store.actions_for_incident(incident):
                results[action.action_id] = _result_of(action)
        for r in records:  # an action whose row names no incident
            if r.action_id and r.action_id not in results:
                results[r.action_id] = _result_of(await store.get_action(r.action_id))
        return records, results


def _result_of(action: ActionRecord | None) -> dict[str, Any]:
    result = action.result if action is not None else None
    return result if isinstance(result, dict) else {}


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
    records, results = asyncio.run(_read(path, since))
    locale = getattr(args, "lang", None) or "en"
    text = (
        format_json_lines(records)
        if args.format == "json"
        else format_text(records, locale=locale, results=results)
    )
    if text:
        print(text, file=stream)
    return 0
