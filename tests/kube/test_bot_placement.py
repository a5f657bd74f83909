"""The shipped Deployment keeps gpunode off GPU nodes: created in the stand-in with the real
client, its pod is scheduled (by the stand-in's scheduler, which honours required node
affinity) on the CPU node only, and stays Pending rather than land on a GPU node."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import yaml

from bot.kube.gateway import Gateway
from gpunode_sandbox.kubesim import KubeSim
from tests.conftest import kube_call

DEPLOYMENT = Path(__file__).resolve().parents[2] / "deploy" / "base" / "deployment.yaml"
Make = Callable[..., Awaitable[tuple[Gateway, KubeSim]]]


async def _bot_pods(sim: KubeSim, *, want: int = 1) -> list[dict[str, Any]]:
    for _ in range(100):
        pods = [
            p for p in sim.list("pods", "gpunode") if p["metadata"]["name"].startswith("gpunode-")
        ]
        if len(pods) >= want:
            return pods
        await asyncio.sleep(0.05)
    return []


async def test_the_bot_deployment_never_lands_on_a_gpu_node(make_gateway: Make) -> None:
    gw, sim = await make_gateway("seed")
    body = yaml.safe_load(DEPLOYMENT.read_text(encoding="utf-8"))
    body["metadata"]["namespace"] = "gpunode"
    # the cluster admin applies the manifest (the bot may not create Deployments)
    status, _ = await kube_call(
        sim.url, "POST", "/apis/apps/v1/namespaces/gpunode/deployments", body=body
    )
    assert status == 201
    [pod] = await _bot_pods(sim)
    assert pod["spec"]["nodeName"] == "cpu-node-01"
    # with the CPU node cordoned, the replacement waits instead of using a GPU node
    await gw.cordon("cpu-node-01", dry_run=False)
    name = pod["metadata"]["name"]
    status, _ = await kube_call(sim.url, "DELETE", f"/api/v1/namespaces/gpunode/pods/{name}")
    assert status == 200
    for _ in range(100):
        pending = [p for p in await _bot_pods(sim) if p["metadata"]["name"] != name]
        if pending:
            break
        await asyncio.sleep(0.05)
    [replacement] = pending
    assert replacement["status"]["phase"] == "Pending"
    assert "nodeName" not in replacement["spec"]
    [event] = [
        e
        for e in sim.list("events", "gpunode")
        if e["reason"] == "FailedScheduling"
        and e["involvedObject"]["name"] == replacement["metadata"]["name"]
    ]
    assert "2 node(s) didn't match Pod's node affinity/selector" in event["message"]
    assert "1 node(s) were unschedulable" in event["message"]
