"""Tier 1's prediction of where evicted pods go, with topology spread constraints and
``matchLabelKeys``, against where the stand-in's own scheduler puts their replacements.

The seed has three nodes, each its own ``kubernetes.io/hostname`` domain: gpu-node-01 (which
tier 1 cordons and drains), gpu-node-02 and cpu-node-01. Every app below spreads over
hostnames with ``maxSkew: 1`` and has one replica on gpu-node-01:

- ``spreader`` (3 replicas, one per node, ``DoNotSchedule``): the cordoned node still counts
  as a domain (``nodeTaintsPolicy`` defaults to Ignore), with 0 replicas once drained, so
  either other node would be at skew 2: Pending;
- ``tolerant``: the same with ``nodeTaintsPolicy: Honor``: the cordoned node's
  unschedulable taint leaves it out, the minimum is 1, and it lands;
- ``scarce``: the same as ``tolerant`` with ``minDomains: 5``: fewer domains than that
  make the minimum 0: Pending;
- ``keyed`` (replicas on gpu-node-01 and cpu-node-01, ``Honor``) with ``matchLabelKeys:
  [pod-template-hash]``, beside two pods of an older revision (same ``app``, another hash) on
  gpu-node-02: only its own revision counts, so it must land on gpu-node-02 (without the
  keys it would have to land on cpu-node-01);
- ``lenient``: like ``spreader`` but ``ScheduleAnyway``, which never blocks: it lands.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from bot.core.model.cluster import ClusterView, PodInfo
from bot.core.remedies.destinations import affinity_filter, remaining_peers
from bot.core.remedies.placement import fits
from bot.core.remedies.planning import plan_tier1
from bot.kube.gateway import Gateway
from bot.services.executing import run_steps
from gpunode_sandbox.kubesim import KubeSim
from gpunode_sandbox.kubesim.scheduler import Scheduler
from tests.kube.remedy_scenarios import container, pod, seed_with

Make = Callable[..., Awaitable[tuple[Gateway, KubeSim]]]
NODE = "gpu-node-01"
NS = "data-prep"
HOST = "kubernetes.io/hostname"
NODES = ["gpu-node-01", "gpu-node-02", "cpu-node-01"]
MINE = ("spreader", "tolerant", "scarce", "keyed", "lenient")


def _spread(app: str, when: str = "DoNotSchedule", **extra: Any) -> dict[str, Any]:
    return {
        "maxSkew": 1,
        "topologyKey": HOST,
        "whenUnsatisfiable": when,
        "labelSelector": {"matchLabels": {"app": app}},
        **extra,
    }


def _deploy(name: str, nodes: list[str], *constraints: dict[str, Any]) -> dict[str, Any]:
    return {
        "kind": "Deployment",
        "name": name,
        "namespace": NS,
        "replicas": len(nodes),
        "nodes": nodes,
        "labels": {"app": name},
        "containers": [container()],
        "pod_spec": {"topologySpreadConstraints": list(constraints)},
    }


def _fleet() -> list[dict[str, Any]]:
    honor = {"nodeTaintsPolicy": "Honor"}
    old = {"app": "keyed", "pod-template-hash": "0ld0ld0ld"}
    return [
        _deploy("spreader", NODES, _spread("spreader")),
        _deploy("tolerant", NODES, _spread("tolerant", **honor)),
        _deploy("scarce", NODES, _spread("scarce", minDomains=5, **honor)),
        _deploy(
            "keyed",
            [NODE, "cpu-node-01"],
            _spread("keyed", matchLabelKeys=["pod-template-hash"], **honor),
        ),
        pod("keyed-old-a", "gpu-node-02", namespace=NS, labels=old),
        pod("keyed-old-b", "gpu-node-02", namespace=NS, labels=old),
        _deploy("lenient", NODES, _spread("lenient", "ScheduleAnyway")),
    ]


def _app(key: str) -> str:
    return key.split("/", 1)[1].rsplit("-", 2)[0]


def _allowed(view: ClusterView, evicted: list[PodInfo], pod: PodInfo) -> list[str]:
    """The nodes the core's rules leave open to ``pod`` once ``evicted`` are gone."""
    peers = remaining_peers(view, evicted)
    assert peers is not None and pod.scheduling is not None and view.room is not None
    rules = affinity_filter(view, pod, peers, cordoning=True)
    return sorted(
        r.name
        for r in view.room
        if r.name != NODE and fits(pod.scheduling, r) and rules.refusal(r.labels) is None
    )


async def _settle(sim: KubeSim) -> dict[str, list[str]]:
    """Each app's replacement pods' nodes ("Pending" when refused), once all have settled."""

    def settled() -> dict[str, list[str]] | None:
        out: dict[str, list[str]] = {}
        for p in sim.api.store.list("pods", NS):
            app = p["metadata"].get("labels", {}).get("app")
            if app not in MINE or p["metadata"].get("deletionTimestamp"):
                continue
            if p["metadata"]["name"].startswith("keyed-old"):
                continue
            where = p["spec"].get("nodeName")
            if where == NODE:
                return None  # the evicted one is still there
            conditions = p.get("status", {}).get("conditions") or []
            refused = any(c.get("reason") == "Unschedulable" for c in conditions)
            if not where and not refused:
                return None
            out.setdefault(app, []).append(where or "Pending")
        return out if sum(len(v) for v in out.values()) == 14 else None

    for _ in range(600):
        state = settled()
        if state is not None:
            return state
        await asyncio.sleep(0.05)
    raise AssertionError("the replacements did not settle")


async def _drain(make_gateway: Make) -> tuple[dict[str, str], dict[str, list[str]], KubeSim]:
    """Tier 1 for real: (each evicted app -> the plan's Pending reason or the one node the
    core leaves open, as "node:<name>"; where the stand-in put each app's pods; the sim)."""
    gw, sim = await make_gateway(seed_with(_fleet()))
    view = await gw.get_cluster_view(NODE)
    plan = plan_tier1(view)
    evicted = [p for p in view.pods if p.key in plan.blast_radius]
    mine = {_app(p.key): p for p in evicted if _app(p.key) in MINE}
    assert sorted(mine) == sorted(MINE), plan.blast_radius
    predicted: dict[str, str] = {}
    for n in plan.notes:
        if n.code == "evicted_pending" and _app(str(n.params["pod"])) in MINE:
            predicted[_app(str(n.params["pod"]))] = str(n.params["why"])
    for app, p in mine.items():
        if app not in predicted:
            open_nodes = _allowed(view, evicted, p)
            predicted[app] = f"node:{open_nodes[0]}" if len(open_nodes) == 1 else "anywhere"
    assert (await run_steps(gw, plan.steps, dry_run=False)).ok
    return predicted, await _settle(sim), sim


async def test_the_plan_predicts_where_spread_constraints_let_evicted_pods_go(
    make_gateway: Make,
) -> None:
    predicted, state, _ = await _drain(make_gateway)
    assert predicted == {
        "spreader": "spread",
        "scarce": "spread",
        "keyed": "node:gpu-node-02",
        "tolerant": "anywhere",
        "lenient": "anywhere",
    }
    # where the stand-in's scheduler, from its own rules, put each app's replacement
    pending = sorted(app for app, where in state.items() if "Pending" in where)
    assert pending == sorted(a for a, why in predicted.items() if why == "spread"), state
    assert sorted(state["keyed"]) == ["cpu-node-01", "gpu-node-02"]
    assert "Pending" not in state["tolerant"] + state["lenient"]


async def test_with_the_stand_ins_spread_filter_off_the_prediction_no_longer_holds(
    make_gateway: Make, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The comparison above can fail: without the stand-in's PodTopologySpread filter, the
    pods the plan says stay Pending are placed."""
    monkeypatch.setattr(Scheduler, "spread_filter", False)
    predicted, state, _ = await _drain(make_gateway)
    pending = sorted(app for app, where in state.items() if "Pending" in where)
    assert pending != sorted(a for a, why in predicted.items() if why == "spread")
