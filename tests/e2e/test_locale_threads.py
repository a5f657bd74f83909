"""End to end through the Slack stand-in: a thread speaks the language of the person
(or channel) that opened it, an ephemeral reply the language of the person who asked, and the
channel's override in the settings wins over both.

Expected wording is never typed here: it is the zh-CN / en rendering of the diagnosis the bot
stored, through the same templates, so the test checks which locale was chosen."""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator
from typing import Any

import pytest

from bot.core.diagnosis.findings import Diagnosis
from bot.core.model.evidence import EvidenceBundle
from bot.render.messages import progress_text, render_diagnosis_messages
from gpunode_sandbox.demo import Demo, running_demo
from gpunode_sandbox.story import CHANNEL
from tests.e2e.conftest import NODE, diagnose, failed_chat_calls, press, thread
from tests.render.told import render_notice

pytestmark = pytest.mark.slow

LIWEI, ALICE, DAVE = "U0LIWEI", "U0ALICE", "U0DAVE"
CJK = re.compile(r"[\u4e00-\u9fff]")


def words(msg: dict[str, Any]) -> str:
    """A message's text and blocks as a person would read them (CJK unescaped)."""
    return str(msg.get("text", "")) + json.dumps(msg.get("blocks", []), ensure_ascii=False)


def headers(blocks: list[dict[str, Any]]) -> list[str]:
    return [b["text"]["text"] for b in blocks if b.get("type") == "header"]


async def expected_headers(demo: Demo, locale: str) -> list[str]:
    """The diagnosis messages' headers as the bot would write the stored diagnosis in ``locale``."""
    (incident,) = await demo.runtime.store.open_incidents(NODE)
    snap = await demo.runtime.store.latest_snapshot(incident.id)
    assert snap is not None
    diagnosis = Diagnosis.model_validate_json(snap.diagnosis_json)
    bundle = EvidenceBundle.model_validate_json(snap.bundle_json)
    messages = render_diagnosis_messages(
        diagnosis, incident_id=incident.id, bundle=bundle, locale=locale
    )
    return [h for _, blocks in messages for h in headers(blocks)]


def posted_headers(demo: Demo, root_ts: str) -> list[str]:
    return [h for m in thread(demo, root_ts)[1:] for h in headers(m.get("blocks", []))]


@pytest.fixture
async def override_en() -> AsyncIterator[Demo]:
    async with running_demo("seed", channel_locales={CHANNEL: "en"}) as d:
        yield d


async def test_a_chinese_speaking_users_diagnosis_opens_a_thread_in_chinese(demo: Demo) -> None:
    root_ts = await diagnose(demo, user=LIWEI)

    zh, en = await expected_headers(demo, "zh-CN"), await expected_headers(demo, "en")
    assert zh != en and all(CJK.search(h) for h in zh)
    assert posted_headers(demo, root_ts) == zh
    (incident,) = await demo.runtime.store.open_incidents(NODE)
    assert incident.locale == "zh-CN"  # the thread keeps it
    root = words(demo.slack.message(CHANNEL, root_ts) or {})
    assert CJK.search(root), root  # the root's status line too
    updates = [
        json.dumps(c.args, ensure_ascii=False)
        for c in demo.slack.calls
        if c.method == "chat.update" and c.args.get("ts") == root_ts
    ]
    assert any(progress_text("running_job", "zh-CN") in u for u in updates)
    ack = render_notice("command_started", "zh-CN", command=f"diagnose {NODE}")[0]
    assert ack in [m["text"] for m in demo.slack.ephemerals(LIWEI)]
    assert failed_chat_calls(demo.slack) == []
    assert demo.runtime.services.bg.errors == []


async def test_in_a_chinese_thread_english_speakers_get_english_ephemeral_replies(
    demo: Demo,
) -> None:
    root_ts = await diagnose(demo, user=LIWEI)

    await diagnose(demo, user=ALICE)  # joins Li Wei's incident
    ack = render_notice("command_started", "en", command=f"diagnose {NODE}")[0]
    assert ack in [m["text"] for m in demo.slack.ephemerals(ALICE)]
    joined = render_notice("diagnose_joined", "zh-CN", node=NODE, user=ALICE)[0]
    assert joined in [m.get("text") for m in thread(demo, root_ts)]  # the thread stays Chinese
    assert posted_headers(demo, root_ts)[-1:] == (await expected_headers(demo, "zh-CN"))[-1:]

    await press(demo, root_ts, DAVE, "gpunode_tier3")  # Dave has no role: refused, to him only
    (refusal,) = [m for m in demo.slack.ephemerals(DAVE) if m.get("thread_ts") == root_ts]
    (row,) = [
        r
        for r in await demo.runtime.store.audit_since(None)
        if r.actor == DAVE and r.decision == "refused"
    ]
    # the presenter words the policy's code in English as the audit keeps its reason
    assert refusal["text"] == row.detail
    assert not CJK.search(words(refusal)), words(refusal)


async def test_the_channel_override_wins_over_the_persons_locale(override_en: Demo) -> None:
    demo = override_en
    root_ts = await diagnose(demo, user=LIWEI)

    assert posted_headers(demo, root_ts) == await expected_headers(demo, "en")
    assert not any(CJK.search(words(m)) for m in thread(demo, root_ts) if m.get("bot_id"))
    ack = render_notice("command_started", "en", command=f"diagnose {NODE}")[0]
    assert ack in [m["text"] for m in demo.slack.ephemerals(LIWEI)]
    lookups = [
        c for c in demo.slack.calls if c.method == "users.info" and c.args.get("include_locale")
    ]
    assert lookups == []  # the channel decides: nobody's locale needs reading
