"""Tier 1's prediction of where evicted pods go, with required pod (anti)affinity, against
where the stand-in's own scheduler puts their replacements.

The seed has two node pools (label ``nodepool``: gpu-h100 for gpu-node-01/02, general for
cpu-node-01). A ``warehouse`` pod runs in the general pool; on gpu-node-01, which tier 1
drains, run:

- ``follower``: affinity to the warehouse's pool: it can land only in the general pool;
- ``loner``: pinned to the general pool, with anti-affinity to the warehouse's pool: Pending;
- ``hermit``: pinned to the general pool, where the warehouse's own anti-affinity keeps it
  out: Pending;
- ``pair``, two replicas, each kept off a node holding the other (by hostname), pinned to
  the general pool, which has one node: one lands, one stays Pending.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

from bot.core.remedies.planning import plan_tier1
from bot.kube.gateway import Gateway
from bot.services.executing import run_steps
from gpunode_sandbox.kubesim import KubeSim
from tests.kube.remedy_scenarios import container, seed_with

Make = Callable[..., Awaitable[tuple[Gateway, KubeSim]]]
NODE = "gpu-node-01"
NS = "data-prep"
POOL = "nodepool"
GENERAL: dict[str, Any] = {"nodeSelector": {POOL: "general"}}


def _term(key: str, **labels: str) -> dict[str, Any]:
    return {"topologyKey": key, "labelSelector": {"matchLabels": labels}}


def _deploy(name: str, node: str, *, replicas: int = 1, **spec: Any) -> dict[str, Any]:
    return {
        "kind": "Deployment",
        "name": name,
        "namespace": NS,
        "replicas": replicas,
        "nodes": [node] * replicas,
        "labels": {"app": name},
        "containers": [container()],
        "pod_spec": spec,
    }


def _required(kind: str, *terms: dict[str, Any]) -> dict[str, Any]:
    return {kind: {"requiredDuringSchedulingIgnoredDuringExecution": list(terms)}}


def _fleet() -> list[dict[str, Any]]:
    return [
        _deploy(
            "warehouse",
            "cpu-node-01",
            affinity=_required("podAntiAffinity", _term(POOL, app="hermit")),
        ),
        _deploy("follower", NODE, affinity=_required("podAffinity", _term(POOL, app="warehouse"))),
        _deploy(
            "loner",
            NODE,
            **GENERAL,
            affinity=_required("podAntiAffinity", _term(POOL, app="warehouse")),
        ),
        _deploy("hermit", NODE, **GENERAL),
        _deploy(
            "pair",
            NODE,
            replicas=2,
            **GENERAL,
            affinity=_required("podAntiAffinity", _term("kubernetes.io/hostname", app="pair")),
        ),
    ]


MINE = ("follower", "loner", "hermit", "pair")


def _app(key: str) -> str:
    return key.split("/", 1)[1].rsplit("-", 2)[0]


async def test_the_plan_predicts_which_evicted_pods_the_scheduler_leaves_pending(
    make_gateway: Make,
) -> None:
    gw, sim = await make_gateway(seed_with(_fleet()))
    view = await gw.get_cluster_view(NODE)
    assert view.peers is not None
    [loner] = [p for p in view.pods if p.name.startswith("loner-")]
    assert loner.scheduling is not None and loner.scheduling.anti_affinity_terms
    assert any(p.anti_affinity_terms for p in view.peers if p.key.startswith(f"{NS}/warehouse"))
    plan = plan_tier1(view)
    evicted = [k for k in plan.blast_radius if _app(k) in MINE]
    assert len(evicted) == 5, plan.blast_radius
    said = {
        str(n.params["pod"]): n.params["why"]
        for n in plan.notes
        if n.code == "evicted_pending" and _app(str(n.params["pod"])) in MINE
    }
    predicted = sorted(_app(k) for k in said)
    assert predicted == ["hermit", "loner", "pair"]
    assert set(said.values()) == {"affinity"}

    assert (await run_steps(gw, plan.steps, dry_run=False)).ok

    def settled() -> dict[str, list[str]] | None:
        """Each app's replacement pods' phases, once every one is bound or refused."""
        out: dict[str, list[str]] = {}
        for pod in sim.api.store.list("pods", NS):
            app = pod["metadata"].get("labels", {}).get("app")
            if app not in MINE or pod["metadata"].get("deletionTimestamp"):
                continue
            if pod["spec"].get("nodeName") == NODE:
                return None  # the evicted one is still there
            conditions = pod.get("status", {}).get("conditions") or []
            refused = any(c.get("reason") == "Unschedulable" for c in conditions)
            if not pod["spec"].get("nodeName") and not refused:
                return None
            out.setdefault(app, []).append(
                "Pending" if not pod["spec"].get("nodeName") else pod["spec"]["nodeName"]
            )
        return out if sum(len(v) for v in out.values()) == 5 else None

    state = None
    for _ in range(600):
        state = settled()
        if state is not None:
            break
        await asyncio.sleep(0.05)
    assert state is not None, "the replacements did not settle"
    actual = sorted(app for app, where in state.items() for w in where if w == "Pending")
    assert actual == predicted
    assert state["follower"] == ["cpu-node-01"]
    assert sorted(state["pair"]) == ["Pending", "cpu-node-01"]
