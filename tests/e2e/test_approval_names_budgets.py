"""The README story, unmodified: alice requests tier 1 before tier 3, bob is asked to approve.

The seed's two PodDisruptionBudgets (``jupyter-alice`` and ``feature-cache``, minAvailable 1,
one pod each) allow no disruption now, as the Kubernetes stand-in's disruption controller
computes their status from its own pods. Tier 1 evicts only ``preprocess``, which no budget
guards, so the dry run's evictions are all accepted; the approver must still read, before
approving, which of the node's non-critical pods a budget pins: the tier-1 confirmation, the
dry-run message and the approval request each name both blocks with their counts, and the
plan neither evicts them nor counts their memory in its relief.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from bot.core.model.actions import ActionPlan
from gpunode_sandbox.demo import Demo, running_demo
from gpunode_sandbox.slacksim.blocks import find_element, message_text
from gpunode_sandbox.story import CHANNEL
from tests.e2e.conftest import diagnose, press, submit_modal, thread

pytestmark = pytest.mark.slow
ALICE, BOB = "U0ALICE", "U0BOB"
#: how each block reads (templates/sentences/common.j2 budget_refusal), with the counts the
#: stand-in's disruption controller reports for the seed's budgets (1 pod, minAvailable 1)
ALICE_BLOCK = (
    "`research/jupyter-alice`: PDB `jupyter-alice` needs 1 healthy, has 1: "
    "eviction would be refused"
)
CACHE_BLOCK = "PDB `feature-cache` needs 1 healthy, has 1: eviction would be refused"


@pytest.fixture
async def demo() -> AsyncIterator[Demo]:
    async with running_demo("seed") as d:
        yield d


async def tier1_plan(demo: Demo) -> ActionPlan:
    (incident,) = await demo.runtime.store.open_incidents()
    snap = await demo.runtime.store.latest_snapshot(incident.id)
    assert snap is not None
    [plan] = [p for p in snap.diagnosis.plans if p.tier == 1]
    return plan


def approval_requests(demo: Demo, root_ts: str) -> list[dict[str, Any]]:
    return [
        m for m in thread(demo, root_ts) if find_element(m.get("blocks") or [], "gpunode_approve")
    ]


async def test_the_seed_storys_approval_request_names_both_budget_blocks_before_bob_approves(
    demo: Demo,
) -> None:
    root_ts = await diagnose(demo)
    plan = await tier1_plan(demo)
    cache = next(
        p for p in demo.kube.list("pods", "serving") if "feature-cache" in p["metadata"]["name"]
    )
    cache_key = f"serving/{cache['metadata']['name']}"
    # the plan picks around both pinned pods and does not count them in its relief
    assert not {"research/jupyter-alice", cache_key} & set(plan.blast_radius)
    assert [p.budget for p in plan.protected if p.refusal] == ["jupyter-alice", "feature-cache"]
    evicted = [s.name for s in plan.steps if s.verb == "evict"]
    assert evicted and all(n.startswith("preprocess-") for n in evicted)

    # the tier-1 confirmation names them
    await press(demo, root_ts, ALICE, "gpunode_tier1")
    view, errors = await submit_modal(demo, ALICE, {"reason": "host memory exhausted"})
    assert errors == {}
    modal = message_text({"blocks": view["blocks"]})
    assert ALICE_BLOCK in modal and f"`{cache_key}`: {CACHE_BLOCK}" in modal

    # the dry-run message names them
    (incident,) = await demo.runtime.store.open_incidents()
    [action] = await demo.runtime.store.actions_for_incident(incident.id)
    assert action.message_ts is not None
    dry = demo.slack.message(CHANNEL, action.message_ts)
    assert dry is not None
    assert ALICE_BLOCK in message_text(dry) and CACHE_BLOCK in message_text(dry)

    # Apply asks for approval; the request bob reads names both blocks, before any approval
    await press(demo, root_ts, ALICE, "gpunode_apply")
    [request] = approval_requests(demo, root_ts)
    text = message_text(request)
    assert ALICE_BLOCK in text and f"`{cache_key}`: {CACHE_BLOCK}" in text
    assert "2 pods pinned by a PodDisruptionBudget" in text
    fresh = await demo.runtime.store.get_action(action.action_id)
    assert fresh is not None and fresh.state == "requested"

    # bob approves: only preprocess is evicted; the pinned pods keep running
    await press(demo, root_ts, BOB, "gpunode_approve")
    assert demo.kube.get("pods", "research", "jupyter-alice") is not None
    assert demo.kube.get("pods", "serving", cache["metadata"]["name"]) is not None


async def test_a_budget_that_allows_a_disruption_is_not_named(demo: Demo) -> None:
    """The counts come from the budget's status: relaxed to minAvailable 0, the stand-in's
    disruption controller allows one disruption, and feature-cache is no longer named."""
    stored = demo.kube.api.store.get("poddisruptionbudgets", "serving", "feature-cache")
    assert stored is not None
    relaxed = {**stored, "spec": {**stored["spec"], "minAvailable": 0}}
    demo.kube.api.store.put("poddisruptionbudgets", relaxed)  # a write: stored ones are read-only
    budget = demo.kube.get("poddisruptionbudgets", "serving", "feature-cache")
    assert budget is not None and budget["status"]["disruptionsAllowed"] == 1

    await diagnose(demo)
    plan = await tier1_plan(demo)

    assert [p.budget for p in plan.protected if p.refusal] == ["jupyter-alice"]
