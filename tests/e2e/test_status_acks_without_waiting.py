"""``status`` is acknowledged within a bounded wait even when its permission check must ask
Slack who is in the policy's user groups (their cache cold): the answer follows the ack,
from the membership Slack then gives, never from an older one (issue #25)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import yaml

from gpunode_sandbox.demo import POLICY, Demo, running_demo
from gpunode_sandbox.story import CHANNEL
from tests.e2e.conftest import text_of

CAROL = "U0CAROL"  # a viewer through the ops user group only
GROUP = "S0VIEWERS"
HELD = "usergroups.users.list"


@pytest.fixture
async def demo(tmp_path: Path) -> AsyncIterator[Demo]:
    policy = yaml.safe_load(POLICY.read_text())
    policy["bindings"]["viewer"] = {"usergroups": [GROUP]}
    path = tmp_path / "policy.yaml"
    path.write_text(yaml.safe_dump(policy))
    async with running_demo("seed", policy_file=path) as d:
        d.slack.add_usergroup(GROUP, "gpu-viewers", [CAROL])
        yield d


async def test_status_is_acked_while_slack_keeps_the_user_groups_and_answered_after(
    demo: Demo,
) -> None:
    demo.slack.hold(HELD)  # Slack does not say who is in the group yet

    acked = await demo.slack.slash_command(CAROL, CHANNEL, "status")

    assert acked.status == 200
    assert acked.body == ""  # acked without words: whether she may see is not known yet
    assert demo.slack.ephemerals(CAROL) == []
    demo.slack.release(HELD)
    await demo.drain()
    (later,) = demo.slack.ephemerals(CAROL)
    # the answer that followed is the one an ack carries once the membership is known
    again = await demo.slack.slash_command(CAROL, CHANNEL, "status")
    assert json.loads(again.body)["text"] == later["text"]


async def test_the_answer_after_the_ack_follows_the_membership_slack_gives_then(
    demo: Demo,
) -> None:
    demo.slack.hold(HELD)
    acked = await demo.slack.slash_command(CAROL, CHANNEL, "status")
    assert acked.body == ""
    demo.slack.add_usergroup(GROUP, "gpu-viewers", [])  # she left the group meanwhile
    demo.slack.release(HELD)
    await demo.drain()
    (later,) = demo.slack.ephemerals(CAROL)
    assert "bound to no role" in text_of(later)  # refused: not the membership of before
