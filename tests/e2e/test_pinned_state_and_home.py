"""The pinned current state and the Home tab, through both stand-ins: the real
bot over HTTP, Slack's pins and views.publish served by the Slack stand-in."""

from __future__ import annotations

from typing import Any

from bot.render.catalogs import translator
from gpunode_sandbox.demo import Demo
from gpunode_sandbox.slacksim.blocks import message_text
from gpunode_sandbox.story import CHANNEL
from tests.e2e.conftest import diagnose, press, request_tier, thread

ALICE, BOB, DAVE, LIWEI = "U0ALICE", "U0BOB", "U0DAVE", "U0LIWEI"


def evidence_copies(messages: list[dict[str, Any]]) -> int:
    return sum(1 for m in messages if "Memory evidence" in message_text(m))


def home_text(demo: Demo, user: str) -> str:
    view = demo.slack.home(user)
    assert view is not None, f"no Home published for {user}"
    assert view["type"] == "home" and len(view["blocks"]) <= 100
    return "\n".join(message_text({"blocks": [b]}) for b in view["blocks"])


async def test_the_first_diagnosis_pins_its_evidence_as_the_current_state(demo: Demo) -> None:
    root = await diagnose(demo)
    replies = thread(demo, root)

    [pinned] = demo.slack.pinned(CHANNEL)
    assert pinned == replies[1]["ts"]  # the first reply: the evidence
    assert "Memory evidence" in message_text(replies[1])
    assert replies[1]["pinned_to"] == [CHANNEL]


async def test_a_second_diagnosis_edits_the_pinned_state_and_leaves_one_line(
    demo: Demo,
) -> None:
    root = await diagnose(demo)
    before = thread(demo, root)
    [pinned] = demo.slack.pinned(CHANNEL)

    await diagnose(demo)
    after = thread(demo, root)

    assert demo.slack.pinned(CHANNEL) == [pinned]  # still one pin, the same message
    assert evidence_copies(after) == evidence_copies(before) == 1
    edited = demo.slack.message(CHANNEL, pinned)
    assert edited is not None and "edited" in edited
    new = [m for m in after if m["ts"] not in {b["ts"] for b in before}]
    lines = [message_text(m) for m in new if ":arrows_counterclockwise:" in message_text(m)]
    assert len(lines) == 1 and "\n" not in lines[0] and len(lines[0]) < 400
    # what the second diagnosis added: the join note, the line and its chart; no evidence
    assert sum(len(message_text(m)) for m in new) < 800


async def test_the_re_diagnosis_after_tier_3_writes_over_the_state_not_a_second_copy(
    demo: Demo,
) -> None:
    root = await diagnose(demo)
    await request_tier(demo, root, 3)
    await press(demo, root, ALICE, "gpunode_apply")
    messages = thread(demo, root)

    assert evidence_copies(messages) == 1
    # the action's before/after says what changed (no second "since" line for the same change)
    assert not any("Since " in message_text(m) for m in messages)
    diff = next(message_text(m) for m in messages if "Before / after" in message_text(m))
    assert "data-prep/preprocess" in diff  # the capped workload is the mover named


async def test_the_home_tab_shows_bob_the_approval_alice_is_waiting_for(demo: Demo) -> None:
    root = await diagnose(demo)
    await request_tier(demo, root, 1)
    await press(demo, root, ALICE, "gpunode_apply")  # tier 1 needs another person's approval

    for user in (BOB, ALICE, DAVE):
        await demo.slack.open_home(user)
    await demo.drain()

    bob = home_text(demo, BOB)
    assert "INC-0001" in bob and "gpu-node-01" in bob
    assert "Tier 1" in bob and f"requested by <@{ALICE}>" in bob
    assert "Nothing is waiting for your approval." in home_text(demo, ALICE)  # her own
    assert "Nothing is waiting for your approval." in home_text(demo, DAVE)  # no role
    assert "Recent diagnoses" in bob and "host memory exhausted by a workload" in bob


async def test_the_home_tab_speaks_the_viewers_language(demo: Demo) -> None:
    await diagnose(demo)

    await demo.slack.open_home(LIWEI)
    await demo.drain()

    text = home_text(demo, LIWEI)
    words = translator("zh-CN")
    assert words.gettext("Open incidents") in text and "INC-0001" in text
    assert words.gettext("Recent diagnoses") in text
    for english in ("Open incidents", "Recent diagnoses", "Waiting for your approval", " ago"):
        assert english not in text
