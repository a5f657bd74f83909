"""A cap rolls every replica of its owner, not only this node's: the
gateway reads the owner's pods on other nodes from the one all-pods list it already makes
(``WorkloadInfo.elsewhere``), and the tier-3 plan names them. Through the stand-in, with the
bot's own token."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import UTC, datetime

from bot.core.model.quantity import quantity_value
from bot.core.model.thresholds import DEFAULT
from bot.core.reporting.analysis import analyze
from bot.kube.gateway import Gateway
from gpunode_sandbox.kubesim import KubeSim, Scenario, load_scenario

NODE = "cpu-node-22"
GI = 1024**3


def _spread() -> Scenario:
    """many-small-pods-one-owner with a second node: api-gateway's 48 replicas are placed
    cycling over [22, 22, 22, 23], so 36 run here and 12 on cpu-node-23."""
    base = load_scenario("many-small-pods-one-owner").model_dump(mode="json")
    other = {**base["nodes"][0], "name": "cpu-node-23"}
    base["nodes"].append(other)
    for w in base["workloads"]:
        if w["name"] == "api-gateway":
            w["nodes"] = [NODE, NODE, NODE, "cpu-node-23"]
    base.pop("expected", None)
    return Scenario.model_validate(base)


async def test_a_cap_names_the_replicas_it_rolls_on_other_nodes(
    make_gateway: Callable[..., Awaitable[tuple[Gateway, KubeSim]]],
) -> None:
    gw, sim = await make_gateway(_spread())
    view = await gw.get_cluster_view(NODE)
    bundle = await gw.run_diagnostic(NODE)

    workload = next(w for w in view.workloads if w.name == "api-gateway")
    there = sorted(
        f"web/{p['metadata']['name']}"
        for p in sim.list("pods")
        if p["metadata"]["name"].startswith("api-gateway")
        and p["spec"].get("nodeName") == "cpu-node-23"
    )
    assert len(there) == 12 and sorted(workload.elsewhere) == there
    assert set(workload.elsewhere.values()) == {"cpu-node-23"}

    d = analyze(bundle, view, thresholds=DEFAULT, now=datetime.now(UTC))
    plan = next(p for p in d.plans if p.tier == 3)
    assert plan.available and plan.target == "Deployment/web/api-gateway"
    assert len(plan.restarts) == 36 and len(plan.blast_radius) == 48
    note = next(n for n in plan.notes if n.code == "rolls_other_nodes")
    assert (note.params["count"], note.params["here"], note.params["elsewhere"]) == (48, 36, 12)
    assert plan.values is not None
    # per pod, and never below half of what the gateway container holds (4.75 GiB)
    assert plan.values.memory_limit_bytes >= 2.375 * GI
    request = quantity_value(plan.values.memory_request)
    assert request is not None and request <= plan.values.memory_limit_bytes
