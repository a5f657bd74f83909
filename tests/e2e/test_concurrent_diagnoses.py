"""Incident threads are created once, through the Slack stand-in: many people diagnosing two
nodes at the same moment get two incident roots, and every post lands in those threads."""

from __future__ import annotations

import asyncio
import re

import pytest

from gpunode_sandbox.demo import Demo
from gpunode_sandbox.story import CHANNEL
from tests.e2e.conftest import failed_chat_calls, incident_roots, text_of

pytestmark = pytest.mark.slow
NODES = ("gpu-node-01", "gpu-node-02")
USERS = ("U0ALICE", "U0BOB", "U0CAROL")


async def test_twenty_concurrent_diagnoses_of_two_nodes_make_exactly_two_threads(
    demo: Demo,
) -> None:
    commands = [
        demo.slack.slash_command(USERS[i % 3], CHANNEL, f"diagnose {NODES[i % 2]}")
        for i in range(20)
    ]

    results = await asyncio.gather(*commands)
    await demo.drain()

    assert [r.status for r in results] == [200] * 20
    roots = incident_roots(demo.slack)
    assert len(roots) == 2
    root_ts = {str(r["ts"]) for r in roots}
    posted = [m for m in demo.slack.ws.messages[CHANNEL].values() if m.get("bot_id")]
    top = [m for m in posted if m.get("thread_ts", m["ts"]) == m["ts"]]
    assert {str(m["ts"]) for m in top} == root_ts
    assert all(str(m["thread_ts"]) in root_ts for m in posted if m not in top)
    evidence = [m for m in posted if "Memory evidence" in text_of(m)]
    assert len(evidence) == 2  # one diagnosis per node; the other 18 requests joined it
    assert {str(m["thread_ts"]) for m in evidence} == root_ts
    incidents = await demo.runtime.store.open_incidents()
    assert sorted(i.node for i in incidents) == sorted(NODES)
    assert {i.thread_ts for i in incidents} == root_ts
    assert failed_chat_calls(demo.slack) == []


async def test_many_requests_joining_a_running_diagnosis_share_one_edited_note(
    demo: Demo,
) -> None:
    requests = 40
    commands = [
        demo.slack.slash_command(USERS[i % 3], CHANNEL, "diagnose gpu-node-01")
        for i in range(requests)
    ]

    results = await asyncio.gather(*commands)
    await demo.drain()

    assert [r.status for r in results] == [200] * requests
    posted = [m for m in demo.slack.ws.messages[CHANNEL].values() if m.get("bot_id")]
    runs = [m for m in posted if "Memory evidence" in text_of(m)]
    notes = [m for m in posted if "is already running in this thread" in text_of(m)]
    assert 1 <= len(notes) <= len(runs)  # at most one note per diagnosis that was joined
    joined = 0
    for note in notes:
        found = re.search(r"\((\d+) more requests? joined it too\)", text_of(note))
        joined += 1 + (int(found.group(1)) if found else 0)
    assert len(runs) + joined == requests  # every request either ran or is counted in a note
    assert failed_chat_calls(demo.slack) == []
