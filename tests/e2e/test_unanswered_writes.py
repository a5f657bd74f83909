"""A write that outlives the client's timeout is not recorded "failed" while it
landed. The bot records the unknown state, re-reads the object, says what really happened
("the cluster did not answer within N s; a re-read shows the memory limit … landed") in the
thread, the audit and the timeline, and offers the undo where the write landed.

The Kubernetes stand-in stores the write and then holds its answer past the client's
timeout (``hold_s``, a slow etcd), or cuts the connection after storing it (``drop``); the
official client talks to it over real HTTP.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator
from typing import Any

import pytest

from bot.core.reporting.records import ActionRecord
from gpunode_sandbox.demo import Demo, running_demo
from gpunode_sandbox.slacksim.blocks import find_element
from gpunode_sandbox.story import CHANNEL
from tests.e2e.conftest import NODE, diagnose, press, request_tier, shown

pytestmark = pytest.mark.slow
ALICE, BOB = "U0ALICE", "U0BOB"
#: the client gives up after TIMEOUT_S; the stand-in answers HOLD_S after storing the write
#: (generous both ways: other requests must still answer within TIMEOUT_S on a busy machine)
TIMEOUT_S, HOLD_S = 4.0, 8.0
DEPLOYMENT = r"^/apis/apps/v1/namespaces/data-prep/deployments/preprocess$"


@pytest.fixture
async def demo() -> AsyncIterator[Demo]:
    async with running_demo("seed") as d:
        d.runtime.services.clusters.default_port().transport.timeout_s = TIMEOUT_S  # type: ignore[attr-defined]
        yield d


def limits(demo: Demo) -> dict[str, Any]:
    dep = demo.kube.get("deployments", "data-prep", "preprocess")
    assert dep is not None
    [container] = dep["spec"]["template"]["spec"]["containers"]
    return dict(container.get("resources") or {})


async def rows(demo: Demo, record: ActionRecord) -> list[Any]:
    return [
        r for r in await demo.runtime.store.audit_since(None) if r.action_id == record.action_id
    ]


async def timeline_text(demo: Demo) -> str:
    incident = (await demo.runtime.store.open_incidents(NODE))[0]
    return "\n".join(e.text for e in await demo.runtime.store.timeline(incident.id))


async def test_a_limit_that_landed_without_an_answer_is_applied_said_so_and_undone(
    demo: Demo,
) -> None:
    root_ts = await diagnose(demo)
    before = limits(demo)
    action = await request_tier(demo, root_ts, 3)
    rule = demo.kube.faults.add("PATCH", DEPLOYMENT, hold_s=HOLD_S)

    await press(demo, root_ts, ALICE, "gpunode_apply")

    assert rule.hits == 1
    assert limits(demo)["limits"]["memory"] == "32Gi"  # the write landed
    action, text, msg = await shown(demo, action)
    assert action.state == "succeeded"
    line = next(ln for ln in text.splitlines() if "did not answer" in ln)
    assert f"the cluster did not answer within {TIMEOUT_S:g} s" in line
    assert "a re-read shows the memory limit" in line and line.endswith("landed")
    assert "memory limit" in text and "→ 32Gi" in text  # old -> new, as for an answer
    assert find_element(msg.get("blocks") or [], "gpunode_undo") is not None
    decisions = [(r.decision, r.outcome) for r in await rows(demo, action)]
    assert ("no_answer", "unknown") in decisions  # recorded unknown before the re-read
    assert decisions.index(("no_answer", "unknown")) < decisions.index(("reread", "landed"))
    assert decisions[-1] == ("executed", "succeeded")
    assert f"did not answer within {TIMEOUT_S:g} s; a re-read shows the memory limit" in (
        await timeline_text(demo)
    )

    await press(demo, root_ts, ALICE, "gpunode_undo")

    assert limits(demo) == before
    await asyncio.sleep(HOLD_S - TIMEOUT_S)  # let the held answer go before the stand-in stops


async def test_a_cordon_whose_connection_dropped_is_reread_and_the_action_goes_on(
    demo: Demo,
) -> None:
    root_ts = await diagnose(demo)
    action = await request_tier(demo, root_ts, 1)
    rule = demo.kube.faults.add("PATCH", rf"^/api/v1/nodes/{NODE}$", drop=True)

    await press(demo, root_ts, ALICE, "gpunode_apply")
    await press(demo, root_ts, BOB, "gpunode_approve")

    assert rule.hits == 1
    node = demo.kube.get("nodes", None, NODE)
    assert node is not None and node["spec"].get("unschedulable") is True
    action, text, msg = await shown(demo, action)
    assert action.state == "succeeded"
    assert "a re-read shows the cordon landed" in text
    evictions = (action.result or {})["evictions"]
    assert evictions and all(e["status"] == "evicted" for e in evictions)  # it went on
    assert find_element(msg.get("blocks") or [], "gpunode_undo") is not None

    await press(demo, root_ts, ALICE, "gpunode_undo")

    node = demo.kube.get("nodes", None, NODE)
    assert node is not None and not node["spec"].get("unschedulable")


async def test_a_write_dropped_before_it_was_stored_is_failed_and_offers_no_undo(
    demo: Demo,
) -> None:
    root_ts = await diagnose(demo)
    before = limits(demo)
    action = await request_tier(demo, root_ts, 3)
    # the request waits before it is handled; the client gives up, so it is never stored
    demo.kube.faults.add("PATCH", DEPLOYMENT, delay_s=TIMEOUT_S + 1.5)

    await press(demo, root_ts, ALICE, "gpunode_apply")
    await asyncio.sleep(2.0)  # the stand-in finishes (and drops) the request the bot left

    assert limits(demo) == before
    action, text, msg = await shown(demo, action)
    assert action.state == "failed"
    assert "a re-read shows the memory limit, the memory request did not land" in text
    assert find_element(msg.get("blocks") or [], "gpunode_undo") is None
    assert ("reread", "not_landed") in [(r.decision, r.outcome) for r in await rows(demo, action)]


async def test_when_the_reread_fails_too_the_action_is_unknown_not_failed(demo: Demo) -> None:
    root_ts = await diagnose(demo)
    action = await request_tier(demo, root_ts, 3)
    held = demo.kube.faults.add("PATCH", DEPLOYMENT, hold_s=HOLD_S)
    # the reads of the Deployment before the write go through; the re-read after it fails
    demo.kube.faults.add("GET", DEPLOYMENT, status=500, after=held)
    seen = len(demo.kube.requests)

    await press(demo, root_ts, ALICE, "gpunode_apply")

    order = [m for m, path, _ in demo.kube.requests[seen:] if re.search(DEPLOYMENT, path)]
    assert order[-2:] == ["PATCH", "GET"], order  # the write, then the re-read

    action, text, msg = await shown(demo, action)
    assert action.state == "failed"  # the lifecycle ended; what it did is unknown
    assert "Unknown" in text.splitlines()[0], text
    assert "the re-read failed too" in text and "check it by hand" in text
    assert find_element(msg.get("blocks") or [], "gpunode_undo") is None
    decisions = [(r.decision, r.outcome) for r in await rows(demo, action)]
    assert ("reread", "unknown") in decisions
    assert decisions[-1] == ("failed", "unknown")
    await asyncio.sleep(HOLD_S - TIMEOUT_S)


async def test_the_thread_says_it_in_chinese_too() -> None:
    async with running_demo("seed", channel_locales={CHANNEL: "zh-CN"}) as demo:
        demo.runtime.services.clusters.default_port().transport.timeout_s = TIMEOUT_S  # type: ignore[attr-defined]
        root_ts = await diagnose(demo)
        action = await request_tier(demo, root_ts, 3)
        demo.kube.faults.add("PATCH", DEPLOYMENT, hold_s=HOLD_S)

        await press(demo, root_ts, ALICE, "gpunode_apply")

        action, text, msg = await shown(demo, action)
        assert action.state == "succeeded"
        assert (
            f"集群在 {TIMEOUT_S:g} 秒内没有应答；重新读取显示内存限制" in text and "已生效" in text
        )
        assert find_element(msg.get("blocks") or [], "gpunode_undo") is not None
        await asyncio.sleep(HOLD_S - TIMEOUT_S)
