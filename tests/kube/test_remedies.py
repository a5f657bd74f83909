"""Remedy primitives through the real client: dry run, undo data, PDB-blocked evictions."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from bot.core.model.actions import PatchResourcesParams, Step
from bot.core.remedies.planning import undo_steps
from bot.errors import ConflictError, InvalidObjectError, KubeError, NotFoundError
from bot.kube.gateway import Gateway
from gpunode_sandbox.kubesim import KubeSim

GW = tuple[Gateway, KubeSim]


def _pods_on(sim: KubeSim, node: str) -> list[dict[str, Any]]:
    return [p for p in sim.list("pods") if p["spec"].get("nodeName") == node]


async def test_cordon_sets_unschedulable_and_records_the_previous_value(gateway: GW) -> None:
    gw, sim = gateway
    change = await gw.cordon("gpu-node-01", dry_run=False)
    assert (change.verb, change.before, change.noop) == ("cordon", {"unschedulable": False}, False)
    assert change.patch == {"spec": {"unschedulable": True}}
    assert change.patch_type == "application/strategic-merge-patch+json"
    assert sim.get("nodes", None, "gpu-node-01")["spec"]["unschedulable"] is True  # type: ignore[index]
    again = await gw.cordon("gpu-node-01", dry_run=False)
    assert again.noop
    undo = await gw.uncordon("gpu-node-01", dry_run=False)
    assert undo.before == {"unschedulable": True} and not undo.noop
    assert not sim.get("nodes", None, "gpu-node-01")["spec"].get("unschedulable")  # type: ignore[index]
    assert (await gw.uncordon("gpu-node-01", dry_run=False)).noop


async def test_dry_run_cordon_changes_nothing(gateway: GW) -> None:
    gw, sim = gateway
    before = sim.get("nodes", None, "gpu-node-01")
    change = await gw.cordon("gpu-node-01", dry_run=True)
    assert change.dry_run and change.after["unschedulable"] is True
    assert sim.get("nodes", None, "gpu-node-01") == before
    assert any(q and "dryRun=All" in q for m, _, q in sim.requests if m == "PATCH")


def _blocking_pdbs(sim: KubeSim) -> dict[str, tuple[str, int, int]]:
    """pod name -> (PDB name, desiredHealthy, currentHealthy) for PDBs allowing no disruption."""
    out = {}
    for pdb in sim.list("poddisruptionbudgets"):
        status = pdb.get("status") or {}
        if status.get("disruptionsAllowed", 0) > 0:
            continue
        match = pdb["spec"]["selector"].get("matchLabels") or {}
        for pod in sim.list("pods", pdb["metadata"]["namespace"]):
            labels = pod["metadata"].get("labels") or {}
            if all(labels.get(k) == v for k, v in match.items()):
                out[pod["metadata"]["name"]] = (
                    pdb["metadata"]["name"],
                    status["desiredHealthy"],
                    status["currentHealthy"],
                )
    return out


async def test_eviction_blocked_by_a_pdb_reports_that_pod_and_evicts_the_rest(gateway: GW) -> None:
    gw, sim = gateway
    pods = [
        p
        for p in _pods_on(sim, "gpu-node-01")
        if not any(o.get("kind") == "DaemonSet" for o in p["metadata"].get("ownerReferences") or [])
    ]
    uids = {p["metadata"]["name"]: p["metadata"]["uid"] for p in pods}
    targets = [(p["metadata"]["namespace"], p["metadata"]["name"]) for p in pods]
    blocking = _blocking_pdbs(sim)
    assert "jupyter-alice" in blocking
    assert len(blocking) < len(targets)
    outcomes = await asyncio.gather(*(gw.evict(ns, n, dry_run=False) for ns, n in targets))
    for outcome in outcomes:
        if outcome.name in blocking:
            pdb, needs, has = blocking[outcome.name]
            assert outcome.status == "blocked"
            assert (outcome.pdb_name, outcome.pdb_needs, outcome.pdb_has) == (pdb, needs, has)
            assert outcome.reason == (
                f"blocked by PodDisruptionBudget {pdb}: needs {needs} healthy, has {has}"
            )
            assert sim.get("pods", outcome.namespace, outcome.name) is not None
        else:
            assert outcome.status == "evicted"
            pod = sim.get("pods", outcome.namespace, outcome.name)  # gone, terminating, replaced
            assert (
                pod is None
                or pod["metadata"].get("deletionTimestamp")
                or pod["metadata"]["uid"] != uids[outcome.name]
            )


async def test_api_throttling_is_a_failed_eviction_to_retry_not_a_budget_block(
    gateway: GW,
) -> None:
    gw, sim = gateway
    pod = next(p for p in _pods_on(sim, "gpu-node-01") if p["metadata"]["name"].startswith("pre"))
    ns, name = pod["metadata"]["namespace"], pod["metadata"]["name"]
    sim.faults.add("POST", r"/eviction$", status=429, times=1)
    outcome = await gw.evict(ns, name, dry_run=False)
    assert outcome.status == "failed"
    assert "throttling" in outcome.reason and "retry later" in outcome.reason
    assert outcome.pdb_name is None
    assert sim.get("pods", ns, name) is not None


async def test_a_pod_under_two_budgets_is_blocked_with_what_to_do(gateway: GW) -> None:
    gw, sim = gateway
    pod = next(p for p in _pods_on(sim, "gpu-node-01") if p["metadata"]["name"].startswith("pre"))
    ns, name = pod["metadata"]["namespace"], pod["metadata"]["name"]
    labels = pod["metadata"]["labels"]
    for i in (1, 2):
        body = {
            "apiVersion": "policy/v1",
            "kind": "PodDisruptionBudget",
            "metadata": {"name": f"extra-{i}", "namespace": ns},
            "spec": {"minAvailable": 0, "selector": {"matchLabels": labels}},
        }
        sim.api.seed(body, validate=True)  # as an admin would; the bot may only list PDBs
    outcome = await gw.evict(ns, name, dry_run=False)
    assert outcome.status == "blocked"
    assert "more than one PodDisruptionBudget" in outcome.reason
    assert sim.get("pods", ns, name) is not None


async def test_dry_run_eviction_changes_nothing(gateway: GW) -> None:
    gw, sim = gateway
    pod = next(p for p in _pods_on(sim, "gpu-node-01") if p["metadata"]["name"].startswith("pre"))
    ns, name = pod["metadata"]["namespace"], pod["metadata"]["name"]
    outcome = await gw.evict(ns, name, dry_run=True)
    assert outcome.status == "dry_run"
    assert sim.get("pods", ns, name) == pod


async def test_evicting_a_missing_pod_is_not_found(gateway: GW) -> None:
    gw, _ = gateway
    assert (await gw.evict("research", "nope", dry_run=False)).status == "not_found"


async def test_priority_class_is_created_then_a_noop_then_a_conflict(gateway: GW) -> None:
    gw, sim = gateway
    value = 1_000_000  # tier 2's (the admission policy admits no other from the bot)
    dry = await gw.ensure_priority_class("gpunode-critical", value, description="", dry_run=True)
    assert dry.dry_run and sim.get("priorityclasses", None, "gpunode-critical") is None
    made = await gw.ensure_priority_class("gpunode-critical", value, description="", dry_run=False)
    assert made.before == {"exists": False} and not made.noop
    assert sim.get("priorityclasses", None, "gpunode-critical")["value"] == value  # type: ignore[index]
    same = await gw.ensure_priority_class("gpunode-critical", value, description="", dry_run=False)
    assert same.noop
    with pytest.raises(ConflictError, match="immutable"):
        await gw.ensure_priority_class("gpunode-critical", 5, description="d", dry_run=False)


async def test_set_priority_class_name_on_a_deployment_keeps_the_old_value_for_undo(
    gateway: GW,
) -> None:
    gw, sim = gateway
    dry = await gw.set_priority_class_name(
        "Deployment", "data-prep", "preprocess", "batch-low", dry_run=True
    )
    assert dry.after["priorityClassName"] == "batch-low"
    dep = sim.get("deployments", "data-prep", "preprocess")
    assert dep is not None and "priorityClassName" not in dep["spec"]["template"]["spec"]
    change = await gw.set_priority_class_name(
        "Deployment", "data-prep", "preprocess", "batch-low", dry_run=False
    )
    assert change.before["priorityClassName"] is None
    dep = sim.get("deployments", "data-prep", "preprocess")
    assert dep is not None and dep["spec"]["template"]["spec"]["priorityClassName"] == "batch-low"
    assert (
        await gw.set_priority_class_name(
            "Deployment", "data-prep", "preprocess", "batch-low", dry_run=False
        )
    ).noop
    undo = await gw.set_priority_class_name(
        "Deployment", "data-prep", "preprocess", None, dry_run=False
    )
    assert undo.before["priorityClassName"] == "batch-low"
    dep = sim.get("deployments", "data-prep", "preprocess")
    assert dep is not None and "priorityClassName" not in dep["spec"]["template"]["spec"]


async def test_patch_container_resources_merges_by_name_and_captures_before(gateway: GW) -> None:
    gw, sim = gateway
    change = await gw.patch_container_resources(
        "Deployment",
        "data-prep",
        "preprocess",
        "pandas",
        requests={"memory": "64Gi"},
        limits={"memory": "64Gi"},
        env={"OMP_NUM_THREADS": "8"},
        dry_run=False,
    )
    assert change.before["resources"] == {
        "requests": {"cpu": "12", "memory": "48Gi"},
        "limits": {"memory": "64Gi"},
    }
    assert change.before["env"] == {"OMP_NUM_THREADS": None}
    container = sim.get("deployments", "data-prep", "preprocess")["spec"]["template"]["spec"][  # type: ignore[index]
        "containers"
    ][0]
    assert container["resources"]["requests"] == {"cpu": "12", "memory": "64Gi"}
    assert {"name": "OMP_NUM_THREADS", "value": "8"} in container["env"]
    assert container["image"].startswith("registry.example.com/")


async def test_undo_of_a_resources_patch_restores_the_exact_previous_container(
    gateway: GW,
) -> None:
    gw, sim = gateway

    def container() -> dict[str, Any]:
        obj = sim.get("deployments", "data-prep", "preprocess")
        assert obj is not None
        return dict(obj["spec"]["template"]["spec"]["containers"][0])

    original = container()
    step = Step(
        verb="patch_resources",
        kind="Deployment",
        namespace="data-prep",
        name="preprocess",
        params={
            "container": "pandas",
            "requests": {"memory": "28Gi", "cpu": "6"},
            "limits": {"memory": "32Gi", "cpu": "8"},
            "env": {"OMP_NUM_THREADS": "4"},
        },
    )
    p = step.params
    assert isinstance(p, PatchResourcesParams)
    change = await gw.patch_container_resources(
        "Deployment",
        "data-prep",
        "preprocess",
        "pandas",
        requests=p.requests,
        limits=p.limits,
        env=p.env,
        dry_run=False,
    )
    assert container()["resources"]["limits"] == {"memory": "32Gi", "cpu": "8"}
    [undo] = undo_steps(step, change.before)
    u = undo.params
    assert isinstance(u, PatchResourcesParams)
    await gw.patch_container_resources(
        "Deployment",
        "data-prep",
        "preprocess",
        "pandas",
        requests=u.requests,
        limits=u.limits,
        env=u.env,
        dry_run=False,
    )
    restored = container()
    assert restored["resources"] == original["resources"]
    # the API server omits an empty env list (omitempty); the stand-in may keep []
    assert (restored.get("env") or []) == (original.get("env") or [])


async def test_patching_a_missing_container_is_not_found(gateway: GW) -> None:
    gw, _ = gateway
    with pytest.raises(NotFoundError, match="pandas"):
        await gw.patch_container_resources(
            "Deployment",
            "data-prep",
            "preprocess",
            "nope",
            requests={},
            limits={},
            env={},
            dry_run=True,
        )


async def test_an_unsupported_controller_kind_is_refused(gateway: GW) -> None:
    gw, _ = gateway
    with pytest.raises(InvalidObjectError, match="Deployment"):
        await gw.read_controller("Widget", "data-prep", "preprocess")


async def test_read_controller_returns_the_object(gateway: GW) -> None:
    gw, _ = gateway
    obj = await gw.read_controller("StatefulSet", "ml-train", "train-llm")
    assert obj["kind"] == "StatefulSet"


async def test_in_place_resize_goes_through_the_resize_subresource(gateway: GW) -> None:
    gw, sim = gateway
    old = sim.get("pods", "research", "jupyter-alice")
    assert old is not None
    old_cpu = old["spec"]["containers"][0]["resources"]["requests"]["cpu"]
    change = await gw.resize_pod(
        "research", "jupyter-alice", "notebook", requests={"cpu": "1500m"}, limits={}, dry_run=False
    )
    assert change.verb == "resize"
    assert change.before["resources"]["requests"]["cpu"] == old_cpu
    pod = sim.get("pods", "research", "jupyter-alice")
    assert (
        pod is not None and pod["spec"]["containers"][0]["resources"]["requests"]["cpu"] == "1500m"
    )
    assert any(path.endswith("/resize") for m, path, _ in sim.requests if m == "PATCH")


async def test_resize_is_refused_with_advice_where_the_server_lacks_it(make_gateway: Any) -> None:
    gw, _ = await make_gateway(sim_kw={"kube_version": "1.31"})
    with pytest.raises(KubeError, match=r"1\.33") as info:
        await gw.resize_pod(
            "research", "jupyter-alice", "notebook", requests={"cpu": "2"}, limits={}, dry_run=True
        )
    assert info.value.code == "resize_unsupported"


async def test_memory_limit_decrease_is_refused_on_1_33_without_restart_policy(
    make_gateway: Any,
) -> None:
    gw, sim = await make_gateway(sim_kw={"kube_version": "1.33"})
    pod = next(
        p for p in _pods_on(sim, "gpu-node-01") if p["metadata"]["name"].startswith("feature-cache")
    )
    with pytest.raises(InvalidObjectError, match="RestartContainer"):
        await gw.resize_pod(
            pod["metadata"]["namespace"],
            pod["metadata"]["name"],
            "redis",
            requests={},
            limits={"memory": "8Gi"},
            dry_run=True,
        )
