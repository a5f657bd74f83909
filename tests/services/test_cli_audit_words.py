"""``gpunode audit --lang``: the details gpunode writes as fixed English sentences (an
approval nobody answered, a write that got no answer and its re-read, a crash, an action a
restart interrupted, a plan no longer current, a policy missing, an alert for an unknown
node, a shared prevention kit) read in the reader's language, worded from the row and the
action's stored result; a person's words stay as typed, and the English table is unchanged.

The rows are written by the action flow itself against the fake cluster; the few written
outside it (alerts, the policy check, the kit) are appended as those services write them.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import io
from typing import Any

import pytest

from bot.cli.audit import escape, main
from bot.core.governance.policy import Deny, Principal, authorize, parse_policy
from bot.core.model import actors
from bot.core.reporting.records import NO_CLUSTER
from bot.errors import ClusterUnreachableError
from bot.render.timeline import entry_text
from bot.services import approving
from bot.services.chatops import NO_POLICY
from bot.store import AuditRecord
from tests.render.test_catalogs import english_words
from tests.services.world import CHANNEL, NODE, POLICY, REQ, TTL_S, World

REASON = "node is falling over"  # what the requester typed (World.request)
EDITS: dict[str, Any] = {"memory_limit": "70Gi", "memory_request": "60Gi"}


class Killed(BaseException):
    """A process killed mid-apply (``kill -9``): no handler in the bot runs."""


async def _apply(world: World, tier: int) -> str:
    action_id = await world.request(tier, **EDITS)
    await world.act.apply(action_id=action_id, user=REQ, channel=CHANNEL)
    return action_id


async def _every_kind_of_row(world: World) -> None:
    # a restart interrupts an apply; the next replica reports what it finds
    world.kube.fail("patch_container_resources", Killed(), dry_run=False)
    with contextlib.suppress(Killed):
        await _apply(world, 3)
    assert await world.service(world.store, replica="replica-b").reconcile_interrupted() == 1
    # a write that gets no answer: the no-answer row, then what the re-read found
    world.kube.fail("patch_container_resources", TimeoutError(), dry_run=False)
    await _apply(world, 3)
    # the re-read before acting fails: a keyed error, then a timeout
    world.kube.fail("read_controller", ClusterUnreachableError("prod-eu", waited_s=10))
    await _apply(world, 3)
    world.kube.fail("read_controller", TimeoutError())
    await _apply(world, 3)
    # a plan that is no longer the incident's
    [incident] = await world.store.open_incidents(node=NODE)
    meta = {"incident": incident.id, "plan_id": "P-gone", "channel": CHANNEL}
    await world.act.validate_submission(meta, {"reason": REASON}, user=REQ)
    # rows other services write
    principal = Principal(user_id=REQ, channel_id=CHANNEL)
    elsewhere = parse_policy({**POLICY, "channels": ["C0ELSEWHERE"]})
    not_here = authorize(principal, "diagnose", elsewhere)
    assert isinstance(not_here, Deny)
    for decision, outcome, action, detail in (
        ("denied", "", "diagnose", NO_POLICY),
        ("refused", "", "tier1.apply", not_here.reason),
        ("refused", "unknown_node", "alert", "no GPU node named gpu-node-99, gpu-node-98"),
        ("shared", "", "prevention_kit.upload", "snapshot 7: INC-0001-kit.md, values.yaml"),
    ):
        await world.store.append_audit(
            AuditRecord(
                at=world.clock(),
                actor=actors.GPUNODE,
                action=action,
                channel=CHANNEL,
                decision=decision,
                outcome=outcome,
                detail=detail,
                cluster=NO_CLUSTER,
            )
        )
    # an approval asked for (tier 1 needs one), then nobody answers in time
    await _apply(world, 1)
    world.clock.advance(TTL_S + 1)
    assert await approving.expire_overdue(world.act.deps) == 1


def _audit(lang: str) -> str:
    out = io.StringIO()
    args = argparse.Namespace(since=None, format="text", config=None, lang=lang)
    assert main(args, out=out) == 0
    return out.getvalue()


WORDED = {
    ("expired", ""),
    ("needs_approval", ""),
    ("no_answer", "unknown"),
    ("reread", "not_landed"),
    ("failed", "error"),
    ("interrupted", "failed"),
    ("refused", "not_current"),
    ("denied", ""),
    ("refused", ""),
    ("refused", "unknown_node"),
    ("shared", ""),
}


async def test_every_fixed_sentence_of_the_audit_log_reads_in_chinese_and_english_is_unchanged(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GPUNODE_STORE__PATH", world.store.path)
    monkeypatch.delenv("GPUNODE_CONFIG", raising=False)
    await _every_kind_of_row(world)
    records = await world.store.audit_since(None)
    assert {(r.decision, r.outcome) for r in records} >= WORDED, "each kind of row is there"

    en = (await asyncio.to_thread(_audit, "en")).splitlines()
    zh = (await asyncio.to_thread(_audit, "zh-CN")).splitlines()
    xa = (await asyncio.to_thread(_audit, "en-XA")).splitlines()

    assert len(en) == len(zh) == len(xa) == len(records) + 1
    for record, row in zip(records, en[1:], strict=True):
        assert row.endswith(escape(record.detail)), (row, record.detail)
    for record, row in zip(records, zh[1:], strict=True):
        if (record.decision, record.outcome) in WORDED and record.detail:
            assert escape(record.detail) not in row, row
    # the reason the requester typed is theirs, quoted as typed
    assert any(row.endswith(REASON) for row in zh)
    for table in (zh, xa):
        text = "\n".join(table).replace(REASON, "")
        assert english_words(text) == [], text
    assert "prod-eu" in "\n".join(zh) and "gpu-node-99, gpu-node-98" in "\n".join(zh)


async def test_the_timeline_says_an_interruption_and_a_crash_in_the_readers_language(
    world: World,
) -> None:
    """What the reconciler found and why an action could not be carried out are kept as codes
    and the error's key: the English entry reads as the services wrote it, the Chinese and the
    pseudo-locale one carry no English."""
    await _every_kind_of_row(world)
    [incident] = await world.store.open_incidents(node=NODE)
    entries = [
        e
        for e in await world.store.timeline(incident.id)
        if e.said and e.said["code"] in ("interrupted", "crashed")
    ]
    assert sorted(e.said["code"] for e in entries if e.said) == [
        "crashed",
        "crashed",
        "interrupted",
    ]
    for entry in entries:
        assert entry_text(entry.said, entry.text, locale="en") == entry.text
        for locale in ("zh-CN", "en-XA"):
            words = entry_text(entry.said, entry.text, locale=locale)
            assert words != entry.text and english_words(words) == [], (locale, words)
