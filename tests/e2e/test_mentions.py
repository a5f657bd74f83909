"""A mention of gpunode in an incident thread is a command in the slash command's grammar,
carried out by the same command table: the thread's incident fills what the mention leaves
out, the verb's permission is checked in the incident's cluster, and words that are not a
command get the grammar's usage error instead of a guess."""

from __future__ import annotations

import pytest

from gpunode_sandbox.demo import Demo
from gpunode_sandbox.story import CHANNEL
from tests.e2e.conftest import NODE, diagnose, ephemeral_texts, text_of, thread

pytestmark = pytest.mark.slow
ALICE, CAROL, DAVE = "U0ALICE", "U0CAROL", "U0DAVE"


async def test_a_bare_mention_posts_the_incidents_status_in_its_thread(demo: Demo) -> None:
    root_ts = await diagnose(demo)
    before = len(thread(demo, root_ts))

    await demo.slack.mention(CAROL, CHANNEL, "", thread_ts=root_ts)
    await demo.drain()

    new = [text_of(m) for m in thread(demo, root_ts)[before:] if m.get("bot_id")]
    assert any("Open incidents" in t and NODE in t and "INC-" in t for t in new), new


async def test_a_mentioned_timeline_uploads_the_threads_postmortem(demo: Demo) -> None:
    root_ts = await diagnose(demo)
    files_before = len(demo.slack.files(CHANNEL))

    await demo.slack.mention(CAROL, CHANNEL, "timeline", thread_ts=root_ts)
    await demo.drain()

    names = [str(f.get("name")) for f in demo.slack.files(CHANNEL)[files_before:]]
    assert any(n.endswith(".md") for n in names), names


async def test_a_mention_by_someone_without_the_verbs_role_is_refused_and_audited(
    demo: Demo,
) -> None:
    root_ts = await diagnose(demo)
    before = len(ephemeral_texts(demo.slack, DAVE))
    thread_before = len(thread(demo, root_ts))

    await demo.slack.mention(DAVE, CHANNEL, "diagnose", thread_ts=root_ts)
    await demo.drain()

    told = ephemeral_texts(demo.slack, DAVE)[before:]
    assert any("roles for diagnose" in t for t in told), told
    assert len(thread(demo, root_ts)) == thread_before + 1  # only the mention itself
    rows = [a for a in await demo.runtime.store.audit_since(None) if a.actor == DAVE]
    assert rows and rows[-1].action == "diagnose" and rows[-1].decision == "denied"


async def test_words_that_are_no_command_get_the_grammars_usage_error(demo: Demo) -> None:
    root_ts = await diagnose(demo)
    before = len(ephemeral_texts(demo.slack, ALICE))
    thread_before = len(thread(demo, root_ts))

    await demo.slack.mention(ALICE, CHANNEL, "diagnos please", thread_ts=root_ts)
    await demo.drain()

    told = ephemeral_texts(demo.slack, ALICE)[before:]
    assert any("did you mean diagnose?" in t for t in told), told
    assert len(thread(demo, root_ts)) == thread_before + 1  # nothing posted but the mention


async def test_a_mention_outside_an_incident_thread_is_left_alone(demo: Demo) -> None:
    await diagnose(demo)
    before = len(demo.slack.messages(CHANNEL))
    told_before = len(ephemeral_texts(demo.slack, ALICE))

    await demo.slack.mention(ALICE, CHANNEL, "status")
    await demo.drain()

    assert len(demo.slack.messages(CHANNEL)) == before + 1  # the mention itself
    assert len(ephemeral_texts(demo.slack, ALICE)) == told_before
