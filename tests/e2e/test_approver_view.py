"""The approver sees what is approved, through the Slack stand-in.

The approval request carries the exact steps (each pod to evict with its owner), the relief,
the server dry run with every PodDisruptionBudget block named, and the requester's reason;
the dry-run message stays in the thread (its buttons give way to "Awaiting approval"); a
plan whose every eviction would be blocked says so at the dry run and is never put up for
approval. In English and in Chinese.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from bot.core.reporting.records import ActionRecord
from gpunode_sandbox.demo import Demo, running_demo
from gpunode_sandbox.slacksim.blocks import find_element, message_text
from gpunode_sandbox.story import CHANNEL
from tests.e2e.conftest import diagnose, press, submit_modal, thread

pytestmark = pytest.mark.slow
ALICE = "U0ALICE"


@pytest.fixture(params=["en", "zh-CN"])
def locale(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
async def demo(locale: str) -> AsyncIterator[Demo]:
    locales = {CHANNEL: locale} if locale != "en" else None
    async with running_demo("seed", channel_locales=locales) as d:
        yield d


#: the words each locale uses (templates/slack/acting.j2, catalogs); {n}: the plan's step count
WORDS = {
    "en": {
        "steps": "*Steps ({n})*",
        "owned": ", owned by `Deployment/preprocess`",
        "relief": "*Relief*",
        "dry": "*Server dry run*",
        "accepted": "accepted every change",
        "blocked": "would be blocked by a PodDisruptionBudget",
        "would": "would be evicted",
        "awaiting": "Awaiting approval",
        "every": "Every eviction in this plan (1)",
        "approval": "Approval needed",
    },
    "zh-CN": {
        "steps": "*步骤（{n}）*",
        "owned": "，属于 `Deployment/preprocess`",
        "relief": "*缓解*",
        "dry": "*服务器端试运行*",
        "accepted": "接受了所有更改",
        "blocked": "会被 PodDisruptionBudget 阻止",
        "would": "将被驱逐",
        "awaiting": "等待审批",
        "every": "此方案中的每次驱逐（1 次）",
        "approval": "",
    },
}


async def request_tier1(demo: Demo, root_ts: str) -> ActionRecord:
    await press(demo, root_ts, ALICE, "gpunode_tier1")
    _, errors = await submit_modal(demo, ALICE, {"reason": "host memory exhausted, need room"})
    assert errors == {}
    (incident,) = await demo.runtime.store.open_incidents()
    [record] = await demo.runtime.store.actions_for_incident(incident.id)
    return record


def approval_request(demo: Demo, root_ts: str) -> dict[str, Any]:
    found = [
        m for m in thread(demo, root_ts) if find_element(m.get("blocks") or [], "gpunode_approve")
    ]
    assert len(found) == 1, "one approval request with an Approve button"
    return found[0]


def preprocess_pod(demo: Demo) -> dict[str, Any]:
    [pod] = [
        p
        for p in demo.kube.list("pods", "data-prep")
        if p["metadata"]["name"].startswith("preprocess-")
    ]
    return pod


def guard_preprocess(demo: Demo) -> str:
    """A budget that allows no disruption of preprocess's one pod (as its owners might)."""
    labels = preprocess_pod(demo)["metadata"]["labels"]
    demo.kube.api.seed(
        {
            "apiVersion": "policy/v1",
            "kind": "PodDisruptionBudget",
            "metadata": {"name": "preprocess-guard", "namespace": "data-prep"},
            "spec": {"minAvailable": 1, "selector": {"matchLabels": labels}},
        },
        validate=True,
    )
    return "preprocess-guard"


async def test_the_approval_request_carries_steps_owners_relief_dry_run_and_reason(
    demo: Demo, locale: str
) -> None:
    w = WORDS[locale]
    root_ts = await diagnose(demo)
    action = await request_tier1(demo, root_ts)
    pod = preprocess_pod(demo)["metadata"]["name"]

    await press(demo, root_ts, ALICE, "gpunode_apply")

    text = message_text(approval_request(demo, root_ts))
    assert w["approval"] in text
    assert "host memory exhausted, need room" in text  # the requester's reason
    assert w["steps"].format(n=len(action.plan["steps"])) in text  # every step the plan has
    assert any(pod in ln and w["owned"] in ln for ln in text.splitlines()), text
    assert w["relief"] in text
    assert w["dry"] in text and w["accepted"] in text
    assert w["would"] in text  # the dry run's own eviction line
    # the dry-run message is still the dry run, without Apply, and says it awaits approval
    fresh = await demo.runtime.store.get_action(action.action_id)
    assert fresh is not None and fresh.message_ts is not None
    dry_msg = demo.slack.message(CHANNEL, fresh.message_ts)
    assert dry_msg is not None
    dry_text = message_text(dry_msg)
    assert w["would"] in dry_text and pod in dry_text
    assert w["awaiting"] in dry_text
    assert find_element(dry_msg.get("blocks") or [], "gpunode_apply") is None


async def test_a_plan_whose_every_eviction_is_blocked_says_so_and_is_not_put_up(
    demo: Demo, locale: str
) -> None:
    w = WORDS[locale]
    root_ts = await diagnose(demo)
    guard = guard_preprocess(demo)

    action = await request_tier1(demo, root_ts)

    fresh = await demo.runtime.store.get_action(action.action_id)
    assert fresh is not None and fresh.state == "refused"
    assert fresh.message_ts is not None
    msg = demo.slack.message(CHANNEL, fresh.message_ts)
    assert msg is not None
    text = message_text(msg)
    assert w["every"] in text
    assert guard in text  # the budget is named
    assert find_element(msg.get("blocks") or [], "gpunode_apply") is None
    rows = [
        r for r in await demo.runtime.store.audit_since(None) if r.action_id == action.action_id
    ]
    assert [r.outcome for r in rows] == ["all_blocked"]


async def test_a_budget_block_is_named_in_the_approval_request_before_anyone_approves(
    locale: str,
) -> None:
    """Tier 1 on a node with 13 replicas of one owner evicts two; a budget guards one of
    them: the dry run finds it, and the approval request names the budget and its counts."""
    w = WORDS[locale]
    node = "gpu-node-41"
    locales = {CHANNEL: locale} if locale != "en" else None
    async with running_demo("multi-replica-one-node", channel_locales=locales) as demo:
        root_ts = await diagnose(demo, node)
        (incident,) = await demo.runtime.store.open_incidents()
        snap = await demo.runtime.store.latest_snapshot(incident.id)
        assert snap is not None
        [tier1] = [p for p in snap.diagnosis.plans if p.tier == 1]
        evicted = [s for s in tier1.steps if s.verb == "evict"]
        assert len(evicted) >= 2, "the scenario's tier 1 evicts more than one pod"
        guarded = evicted[0]
        # the stand-in's store, as a cluster admin would label the pod and add the budget
        stored = demo.kube.api.store.get("pods", guarded.namespace, guarded.name)
        assert stored is not None
        labels = {**(stored["metadata"].get("labels") or {}), "guard": "this-one"}
        # a write (a label through the API bumps the resourceVersion; stored ones are read-only)
        demo.kube.api.store.put(
            "pods", {**stored, "metadata": {**stored["metadata"], "labels": labels}}
        )
        demo.kube.api.seed(
            {
                "apiVersion": "policy/v1",
                "kind": "PodDisruptionBudget",
                "metadata": {"name": "one-guard", "namespace": guarded.namespace},
                "spec": {"minAvailable": 1, "selector": {"matchLabels": {"guard": "this-one"}}},
            },
            validate=True,
        )

        action = await request_tier1(demo, root_ts)
        assert (await demo.runtime.store.get_action(action.action_id)).state == "requested"  # type: ignore[union-attr]
        await press(demo, root_ts, ALICE, "gpunode_apply")

        text = message_text(approval_request(demo, root_ts))
        assert w["blocked"] in text
        assert "one-guard" in text  # the budget is named before approval
        blocked_line = next(
            ln for ln in text.splitlines() if guarded.name in ln and "one-guard" in ln
        )
        assert "1" in blocked_line  # with its counts (needs 1 healthy, has 1)
        others = [s.name for s in evicted[1:]]
        assert all(name in text for name in others)
