"""The Home tab is pushed, not only published when opened: when alice asks for tier 1's
approval, the Home of everyone who may decide it (bob, the approver) is published at once
through the Slack stand-in's ``views.publish``, never the requester's, nor of people without
an approving role; when bob decides, his Home is published again without it."""

from __future__ import annotations

from pathlib import Path

from gpunode_sandbox.demo import Demo, running_demo
from gpunode_sandbox.slacksim.blocks import message_text
from gpunode_sandbox.story import CHANNEL
from tests.e2e.conftest import (
    diagnose,
    incident_roots,
    press,
    request_tier,
    submit_modal,
    text_of,
)

ALICE, BOB, CAROL, DAVE = "U0ALICE", "U0BOB", "U0CAROL", "U0DAVE"


def home_text(demo: Demo, user: str) -> str:
    view = demo.slack.home(user)
    assert view is not None, f"no Home published for {user}"
    assert view["type"] == "home" and len(view["blocks"]) <= 100
    return "\n".join(message_text({"blocks": [b]}) for b in view["blocks"])


async def test_an_approval_request_pushes_the_deciders_home_tab_and_no_one_elses(
    demo: Demo,
) -> None:
    root = await diagnose(demo)
    await request_tier(demo, root, 1)
    assert demo.slack.home(BOB) is None  # nobody opened a Home, nothing asked for one yet

    await press(demo, root, ALICE, "gpunode_apply")  # tier 1 needs another person's approval
    await demo.drain()

    bob = home_text(demo, BOB)  # pushed: bob never opened his Home
    assert "Tier 1" in bob and f"requested by <@{ALICE}>" in bob and "INC-0001" in bob
    assert demo.slack.home(ALICE) is None  # never the requester
    assert demo.slack.home(CAROL) is None  # a viewer cannot decide it
    assert demo.slack.home(DAVE) is None  # no role at all


async def test_a_decided_approval_leaves_the_deciders_home_tab(demo: Demo) -> None:
    root = await diagnose(demo)
    await request_tier(demo, root, 1)
    await press(demo, root, ALICE, "gpunode_apply")
    await demo.drain()
    assert f"requested by <@{ALICE}>" in home_text(demo, BOB)

    await press(demo, root, BOB, "gpunode_approve")
    await demo.drain()

    bob = home_text(demo, BOB)
    assert f"requested by <@{ALICE}>" not in bob
    assert "Nothing is waiting for your approval." in bob


POLICY = """
roles:
  responder: {allows: [1, 2, 3], can_diagnose: true}
  approver: {can_approve: [1, 2, 3], can_diagnose: true}
  approver-us: {can_approve: [1, 2, 3], can_diagnose: true, clusters: [prod-us]}
bindings:
  responder: {users: [U0ALICE]}
  approver: {users: [U0BOB]}
  approver-us: {users: [U0DAVE]}
approvals:
  1: {quorum: 1}
"""


async def test_the_push_checks_the_role_in_the_incidents_cluster(tmp_path: Path) -> None:
    """Dave approves in prod-us only: a prod-eu approval is not pushed to him; bob's is."""
    policy = tmp_path / "policy.yaml"
    policy.write_text(POLICY)
    async with running_demo("seed", second="slab-leak", policy_file=policy) as demo:
        result = await demo.slack.slash_command(ALICE, CHANNEL, "diagnose prod-eu/gpu-node-01")
        assert result.status == 200, result.body
        await demo.drain()
        roots = [m for m in incident_roots(demo.slack) if "prod-eu/gpu-node-01" in text_of(m)]
        assert roots
        root = str(roots[-1]["ts"])
        await press(demo, root, ALICE, "gpunode_tier1")
        _, errors = await submit_modal(demo, ALICE, {"reason": "host memory exhausted"})
        assert errors == {}
        await press(demo, root, ALICE, "gpunode_apply")
        await demo.drain()

        assert "prod-eu/gpu-node-01" in home_text(demo, BOB)
        assert demo.slack.home(DAVE) is None
