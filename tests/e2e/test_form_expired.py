"""Slack opens a modal only within 3 s of the click that gave its trigger. When the bot
misses that (a busy bot), Slack answers ``views.open`` with ``expired_trigger_id`` and
nothing appears: the person is told so, in their thread and language, and pressing again
opens the form."""

from __future__ import annotations

from bot.render.blocks import DETAILS_ACTION
from gpunode_sandbox.demo import Demo
from gpunode_sandbox.slacksim import SlackSim
from gpunode_sandbox.story import FORM_EXPIRED, run_story
from tests.e2e.conftest import diagnose, ephemeral_texts, press

ALICE, LI = "U0ALICE", "U0LIWEI"


def _calls(sim: SlackSim, method: str) -> list[bool]:
    return [c.ok for c in sim.calls if c.method == method]


async def test_a_form_that_opens_too_late_tells_the_person_to_press_again(demo: Demo) -> None:
    root = await diagnose(demo)
    demo.slack.fail("views.open", error="expired_trigger_id")
    await press(demo, root, ALICE, "gpunode_tier3")
    assert _calls(demo.slack, "views.open") == [False]
    assert not demo.slack.open_views(ALICE)
    told = [t for t in ephemeral_texts(demo.slack, ALICE) if FORM_EXPIRED in t]
    assert len(told) == 1 and "3 seconds" in told[0]
    assert [e["channel"] for e in demo.slack.ephemerals(ALICE) if FORM_EXPIRED in str(e)] == [
        "C0INCIDENT"
    ]
    assert [e.get("thread_ts") for e in demo.slack.ephemerals(ALICE) if FORM_EXPIRED in str(e)] == [
        root
    ]
    # pressing again opens the form, as a click answered in time does
    await press(demo, root, ALICE, "gpunode_tier3")
    assert _calls(demo.slack, "views.open") == [False, True]
    assert len(demo.slack.open_views(ALICE)) == 1


async def test_the_person_is_told_in_their_own_language(demo: Demo) -> None:
    root = await diagnose(demo)
    demo.slack.fail("views.open", error="expired_trigger_id")
    await press(demo, root, LI, "gpunode_tier3")
    texts = ephemeral_texts(demo.slack, LI)
    assert any("3 秒内" in t and "请再按一次按钮" in t for t in texts), texts
    assert not any(FORM_EXPIRED in t for t in texts)


async def test_any_other_refusal_of_the_form_is_not_worded_as_lateness(demo: Demo) -> None:
    root = await diagnose(demo)
    demo.slack.fail("views.open", error="invalid_arguments")
    await press(demo, root, ALICE, "gpunode_tier3")
    assert not any(FORM_EXPIRED in t for t in ephemeral_texts(demo.slack, ALICE))


async def test_the_scripted_story_presses_again_when_told_and_runs_to_its_end(demo: Demo) -> None:
    demo.slack.fail("views.open", error="expired_trigger_id")
    log = await run_story(demo.slack, demo.drain)
    assert "gpunode_tier3: the form opened too late for Slack; pressed again" in log.steps
    assert "tier 3 applied" in log.steps


async def test_details_that_open_too_late_say_so_and_open_when_pressed_again(demo: Demo) -> None:
    root = await diagnose(demo)
    demo.slack.fail("views.open", error="expired_trigger_id")
    await press(demo, root, ALICE, DETAILS_ACTION)
    told = [t for t in ephemeral_texts(demo.slack, ALICE) if FORM_EXPIRED in t]
    assert len(told) == 1
    assert not any("expired_trigger_id" in t for t in ephemeral_texts(demo.slack, ALICE))
    await press(demo, root, ALICE, DETAILS_ACTION)
    assert _calls(demo.slack, "views.open") == [False, True]
