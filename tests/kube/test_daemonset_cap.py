"""Tier 3 caps a DaemonSet that holds the memory (daemonset-leak): the bot's own token may
patch it (deployed ClusterRole), the stand-in rolls its pod, and the plan states the blast
radius across nodes."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from typing import Any

from bot.core.model.actions import PatchResourcesParams
from bot.core.model.thresholds import DEFAULT
from bot.core.reporting.analysis import analyze
from bot.kube.gateway import Gateway
from gpunode_sandbox.kubesim import KubeSim

NODE = "gpu-node-28"


def _limit(pod: dict[str, Any]) -> str | None:
    return pod["spec"]["containers"][0].get("resources", {}).get("limits", {}).get("memory")


async def test_tier3_caps_the_leaking_daemonset_and_its_pod_rolls_with_the_cap(
    make_gateway: Callable[..., Awaitable[tuple[Gateway, KubeSim]]],
) -> None:
    gw, sim = await make_gateway("daemonset-leak")
    bundle = await gw.run_diagnostic(NODE)
    view = await gw.get_cluster_view(NODE)
    d = analyze(bundle, view, thresholds=DEFAULT, now=datetime.now(UTC))
    plan = next(p for p in d.plans if p.tier == 3)
    step = plan.steps[0]
    assert (plan.available, plan.relieves) == (True, True)
    assert (step.kind, step.namespace, step.name) == ("DaemonSet", "logging", "log-shipper")
    note = next(n for n in plan.notes if n.code == "daemonset_rolls_every_node")
    everywhere = [p for p in sim.list("pods") if p["metadata"]["name"].startswith("log-shipper")]
    assert note.params["count"] == len(everywhere) and note.params["here"] == 1

    p = step.params
    assert isinstance(p, PatchResourcesParams)
    change = await gw.patch_container_resources(
        "DaemonSet",
        "logging",
        "log-shipper",
        p.container,
        requests=p.requests,
        limits=p.limits,
        env=p.env,
        dry_run=False,
    )

    assert (change.before["resources"].get("limits") or {}).get("memory") is None
    new_limit = p.limits["memory"]
    for _ in range(200):
        here = [
            p
            for p in sim.list("pods")
            if p["metadata"]["name"].startswith("log-shipper") and p["spec"].get("nodeName") == NODE
        ]
        if here and all(_limit(p) == new_limit for p in here):
            break
        await asyncio.sleep(0.05)
    assert here and all(_limit(p) == new_limit for p in here)
