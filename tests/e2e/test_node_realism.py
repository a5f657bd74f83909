"""End to end: what a person sees in Slack when the node behaves like a real one.

- A node under DiskPressure refuses the collector: the thread says the kubelet refused it,
  why, and which setting (with its ResourceQuota overlay) runs the collector anyway.
- The seed's preprocessing kills are cgroup-limit kills (NPD OOMKilling "Memory cgroup out of
  memory"): the thread never calls them a global OOM.
"""

from __future__ import annotations

import copy
import json

import pytest

from bot.render.blocks import DETAILS_ACTION
from gpunode_sandbox.demo import Demo
from gpunode_sandbox.story import ALICE
from tests.e2e.conftest import NODE, diagnose, failed_chat_calls, press, text_of, thread

pytestmark = pytest.mark.slow


async def test_a_refused_collector_is_explained_with_the_fallback_in_the_thread(
    demo: Demo,
) -> None:
    node = copy.deepcopy(demo.kube.api.store.get("nodes", None, NODE))
    assert node is not None
    node["status"]["conditions"].append(
        {
            "type": "DiskPressure",
            "status": "True",
            "reason": "KubeletHasDiskPressure",
            "message": "kubelet has disk pressure",
        }
    )
    demo.kube.api.store.put("nodes", node)

    root_ts = await diagnose(demo)

    replies = "\n".join(text_of(m) for m in thread(demo, root_ts)[1:])
    assert "not_admitted" in replies
    assert "DiskPressure" in replies
    assert "system-node-critical" in replies and "critical-collector" in replies
    assert failed_chat_calls(demo.slack) == []


async def test_the_seed_thread_reports_cgroup_oom_kills_not_a_global_oom(demo: Demo) -> None:
    root_ts = await diagnose(demo)
    await press(demo, root_ts, ALICE, DETAILS_ACTION)  # the findings live in the Details

    [modal] = demo.slack.open_views(ALICE)
    details = json.dumps(modal, ensure_ascii=False)
    replies = "\n".join(text_of(m) for m in thread(demo, root_ts))
    assert "inside memory cgroups that hit their own limit" in details
    assert "global OOM killer ran" not in details + replies
    assert failed_chat_calls(demo.slack) == []
