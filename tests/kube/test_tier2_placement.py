"""Tier 2 knows where the restarted pod goes, through the real gateway over the stand-in:
its PriorityClass never preempts (preemptionPolicy Never), a cordoned node cannot take the
pod back (refused when no other node can), and the pods a higher priority would preempt
elsewhere are named. The stand-in's scheduler is checked against the same facts."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from bot.core.remedies.planning import plan_tier2
from bot.kube.gateway import Gateway
from bot.render.sentences import sentence
from bot.services.executing import run_steps
from gpunode_sandbox.kubesim import KubeSim
from tests.conftest import kube_call
from tests.kube.remedy_scenarios import container, seed_with

Make = Callable[..., Awaitable[tuple[Gateway, KubeSim]]]
NODE = "gpu-node-01"


def _gpu_filler(priority_class: str | None = "batch-low") -> dict[str, Any]:
    """The four GPUs seed's eval-sweep leaves free on gpu-node-02, taken by low-priority
    work: no room for train-llm (8 GPUs) there."""
    return {
        "kind": "Deployment",
        "name": "sweep",
        "namespace": "research",
        "nodes": ["gpu-node-02"],
        "priority_class": priority_class,
        "containers": [
            container(
                "sweep",
                requests={"cpu": "8", "memory": "64Gi", "nvidia.com/gpu": "4"},
                limits={"memory": "64Gi", "nvidia.com/gpu": "4"},
            )
        ],
    }


async def test_the_priority_class_is_created_with_preemption_policy_never(
    make_gateway: Make,
) -> None:
    gw, sim = await make_gateway("seed")
    plan = plan_tier2(await gw.get_cluster_view(NODE))
    result = await run_steps(gw, plan.steps[:1], dry_run=False)
    assert result.ok
    pc = sim.get("priorityclasses", None, plan.steps[0].name)
    assert pc is not None and pc["preemptionPolicy"] == "Never"


async def test_on_a_cordoned_node_with_no_room_elsewhere_tier2_is_refused_and_says_why(
    make_gateway: Make,
) -> None:
    gw, _ = await make_gateway(seed_with([_gpu_filler()]))
    await gw.cordon(NODE, dry_run=False)
    plan = plan_tier2(await gw.get_cluster_view(NODE))
    assert not plan.available and "restarts_cannot_return" in plan.warnings
    [note] = [n for n in plan.notes if n.code == "restart_pending"]
    assert note.params["pod"] == "ml-train/train-llm-0" and note.params["cordoned"] == "yes"
    # what PreemptLowerPriority would take (both GPU users; the DaemonSet pod is reprieved);
    # Never takes nothing
    preempt = str(note.params["preempt"])
    assert preempt.startswith("ml-train/eval-sweep-") and ", research/sweep-" in preempt
    assert preempt.endswith(" on gpu-node-02") and "fluent-bit" not in preempt
    text = sentence("notes", note.code, note.params, fmt="text", strict=True, locale="en")
    assert "cannot come back" in text and "nothing is preempted" in text


async def test_on_a_cordoned_node_tier2_names_where_the_pod_goes(make_gateway: Make) -> None:
    gw, _ = await make_gateway(seed_with(drop=("eval-sweep",)))  # gpu-node-02's GPUs free
    await gw.cordon(NODE, dry_run=False)
    plan = plan_tier2(await gw.get_cluster_view(NODE))
    assert plan.available
    [note] = [n for n in plan.notes if n.code == "restart_moves_cordoned"]
    assert (note.params["pod"], note.params["nodes"]) == ("ml-train/train-llm-0", "gpu-node-02")


async def test_an_uncordoned_node_takes_the_restarted_pod_back_without_a_note(
    make_gateway: Make,
) -> None:
    gw, _ = await make_gateway(seed_with([_gpu_filler()]))
    plan = plan_tier2(await gw.get_cluster_view(NODE))
    assert plan.available
    assert not [n for n in plan.notes if n.code.startswith("restart_")]


@pytest.mark.parametrize(
    ("policy", "preempted"), [("PreemptLowerPriority", True), ("Never", False)]
)
async def test_the_stand_in_scheduler_preempts_only_when_the_policy_allows(
    make_gateway: Make, policy: str, preempted: bool
) -> None:
    gw, sim = await make_gateway(seed_with([_gpu_filler()]))
    # the world is set up by the cluster admin: a class the bot may not create, and the patch
    status, _ = await kube_call(
        sim.url,
        "POST",
        "/apis/scheduling.k8s.io/v1/priorityclasses",
        body={
            "apiVersion": "scheduling.k8s.io/v1",
            "kind": "PriorityClass",
            "metadata": {"name": "urgent"},
            "value": 100000,
            "description": "test",
            "preemptionPolicy": policy,
        },
    )
    assert status == 201
    await gw.cordon(NODE, dry_run=False)
    sweep = next(
        p for p in sim.list("pods", "research") if p["metadata"]["name"].startswith("sweep")
    )
    status, _ = await kube_call(
        sim.url,
        "PATCH",
        "/apis/apps/v1/namespaces/ml-train/statefulsets/train-llm",
        body={"spec": {"template": {"spec": {"priorityClassName": "urgent"}}}},
        content_type="application/strategic-merge-patch+json",
    )
    assert status == 200
    for _ in range(100):
        pod = sim.get("pods", "ml-train", "train-llm-0")
        if pod is not None and pod["spec"].get("priorityClassName") == "urgent":
            break
        await asyncio.sleep(0.05)
    assert pod is not None and pod["spec"].get("priorityClassName") == "urgent"
    gone = sim.get("pods", "research", sweep["metadata"]["name"]) is None
    assert gone is preempted
    if preempted:
        assert pod["spec"]["nodeName"] == "gpu-node-02"
        assert any(e["reason"] == "Preempted" for e in sim.list("events", "research"))
    else:
        assert pod["status"]["phase"] == "Pending" and "nodeName" not in pod["spec"]
        [event] = [
            e
            for e in sim.list("events", "ml-train")
            if e["reason"] == "FailedScheduling" and e["involvedObject"]["name"] == "train-llm-0"
        ]
        assert "1 node(s) were unschedulable" in event["message"]
        assert "Insufficient nvidia.com/gpu" in event["message"]
        assert "preemptionPolicy=Never" in event["message"]
