"""The Prevention kit button end to end: one upload per snapshot whatever the clicks, and
each upload audited."""

from __future__ import annotations

import asyncio

from gpunode_sandbox.demo import Demo
from gpunode_sandbox.story import CHANNEL, find_button
from tests.e2e.conftest import diagnose, ephemeral_texts, thread

ALICE = "U0ALICE"


async def test_repeat_clicks_upload_the_kit_once_per_snapshot_and_each_upload_is_audited(
    demo: Demo,
) -> None:
    root_ts = await diagnose(demo)
    found = find_button(thread(demo, root_ts), "gpunode_prevention")
    assert found is not None
    ts, button = found
    before = len(demo.slack.files(CHANNEL))

    results = await asyncio.gather(
        *(
            demo.slack.click(ALICE, CHANNEL, ts, "gpunode_prevention", value=button.get("value"))
            for _ in range(3)
        )
    )
    await demo.drain()

    assert [r.status for r in results] == [200, 200, 200]
    uploads = len(demo.slack.files(CHANNEL)) - before
    audit = [a for a in await demo.runtime.store.audit_since() if a.action.startswith("prevention")]
    assert len(audit) == 1
    assert (audit[0].actor, audit[0].decision) == (ALICE, "shared")
    assert uploads == len(audit[0].detail.split(": ", 1)[1].split(", "))
    told = ephemeral_texts(demo.slack, ALICE)
    assert sum("already in its thread" in t for t in told) == 2
