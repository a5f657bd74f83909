"""Tier 2 follows topology spread constraints when it says where a restarted GPU pod goes,
through the real gateway over the stand-in, and the stand-in's own scheduler agrees.

train-llm (8 GPUs, on gpu-node-01, which is cordoned) spreads by hostname over the label
``tier: training``; another pod with that label runs on gpu-node-02, the only other node with
8 free GPUs. The cordoned node still counts as a domain, with 0 once train-llm-0 leaves (and
cpu-node-01 holds 0 too), so gpu-node-02 is at skew 2: with ``maxSkew: 1`` the pod has
nowhere to go and tier 2 is refused; with ``maxSkew: 2`` it goes to gpu-node-02.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from bot.core.remedies.planning import plan_tier2
from bot.kube.gateway import Gateway
from bot.services.executing import run_steps
from gpunode_sandbox.kubesim import KubeSim, load_scenario
from tests.conftest import kube_call
from tests.kube.remedy_scenarios import pod, seed_with

Make = Callable[..., Awaitable[tuple[Gateway, KubeSim]]]
NODE = "gpu-node-01"


def _fleet(skew: int) -> Any:
    train = next(
        w.model_dump(mode="json") for w in load_scenario("seed").workloads if w.name == "train-llm"
    )
    train["pod_spec"] = {
        "topologySpreadConstraints": [
            {
                "maxSkew": skew,
                "topologyKey": "kubernetes.io/hostname",
                "whenUnsatisfiable": "DoNotSchedule",
                "labelSelector": {"matchLabels": {"tier": "training"}},
            }
        ]
    }
    other = pod("trainer-cache", "gpu-node-02", namespace="ml-train", labels={"tier": "training"})
    return seed_with([train, other], drop=("train-llm", "eval-sweep"))


async def _where(sim: KubeSim, restarted: Callable[[dict[str, Any]], bool]) -> str:
    """train-llm-0's node once its new pod is bound, or "Pending" once it is refused."""
    for _ in range(400):
        p = sim.get("pods", "ml-train", "train-llm-0")
        if p is not None and restarted(p) and not p["metadata"].get("deletionTimestamp"):
            if p["spec"].get("nodeName"):
                return str(p["spec"]["nodeName"])
            conditions = p.get("status", {}).get("conditions") or []
            if any(c.get("reason") == "Unschedulable" for c in conditions):
                return "Pending"
        await asyncio.sleep(0.05)
    raise AssertionError("train-llm-0 did not settle")


@pytest.mark.parametrize(("skew", "goes"), [(1, "Pending"), (2, "gpu-node-02")])
async def test_tier2_says_where_a_spread_gpu_pod_goes_and_the_scheduler_agrees(
    make_gateway: Make, skew: int, goes: str
) -> None:
    gw, sim = await make_gateway(_fleet(skew))
    await gw.cordon(NODE, dry_run=False)
    view = await gw.get_cluster_view(NODE)
    [train] = [p for p in view.pods if p.name == "train-llm-0"]
    assert train.scheduling is not None and train.scheduling.spread_constraints
    plan = plan_tier2(view)
    if goes == "Pending":
        assert not plan.available and "restarts_cannot_return" in plan.warnings
        [note] = [n for n in plan.notes if n.code == "restart_pending"]
        assert note.params["pod"] == "ml-train/train-llm-0"
        # the stand-in agrees: restart it by hand (an annotation on the template)
        status, _ = await kube_call(
            sim.url,
            "PATCH",
            "/apis/apps/v1/namespaces/ml-train/statefulsets/train-llm",
            body={"spec": {"template": {"metadata": {"annotations": {"restart": "1"}}}}},
            content_type="application/strategic-merge-patch+json",
        )
        assert status == 200
        where = await _where(sim, lambda p: "restart" in (p["metadata"].get("annotations") or {}))
        event = next(
            e["message"]
            for e in sim.list("events", "ml-train")
            if e["reason"] == "FailedScheduling" and e["involvedObject"]["name"] == "train-llm-0"
        )
        assert "didn't match pod topology spread constraints" in event
    else:
        assert plan.available
        [note] = [n for n in plan.notes if n.code == "restart_moves_cordoned"]
        assert (note.params["pod"], note.params["nodes"]) == ("ml-train/train-llm-0", goes)
        assert (await run_steps(gw, plan.steps, dry_run=False)).ok
        where = await _where(sim, lambda p: bool(p["spec"].get("priorityClassName")))
    assert where == goes
