"""Tier 3 resizes in place where the server offers ``pods/resize`` and the kubelet can do it,
through the real gateway over the stand-in at each version; otherwise it falls back to the
controller template. The stand-in serves the subresource per version, as strictly."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

import pytest
from kubernetes.client.exceptions import ApiException

from bot.core.model.actions import Step, Tier3Values
from bot.core.model.plans import make_plan
from bot.core.remedies.planning import undo_steps
from bot.core.remedies.resizes import in_place_plan, in_place_refusal
from bot.core.remedies.watching import judge
from bot.kube.gateway import Gateway
from bot.render.sentences import sentence
from bot.services.executing import run_steps
from gpunode_sandbox.kubesim import KubeSim, Scenario, load_scenario
from tests.kube.remedy_scenarios import seed_with

Make = Callable[..., Awaitable[tuple[Gateway, KubeSim]]]
NODE = "gpu-node-01"
GI = 1024**3


def _cache(policy: str | None = None, *, unlimited: bool = False) -> Scenario:
    """seed's feature-cache (redis: requests 500m/1Gi, limit 12Gi or none, uses 3Gi)."""
    raw = next(
        w.model_dump(mode="json")
        for w in load_scenario("seed").workloads
        if w.name == "feature-cache"
    )
    if policy:
        raw["containers"][0]["resize_policy"] = {"memory": policy}
    if unlimited:
        raw["containers"][0]["limits"] = {}
    return seed_with([raw], drop=("feature-cache",))


def _template(limit: str, request: str, *, cpu: str | None = None) -> Step:
    limits = {"memory": limit} | ({"cpu": cpu} if cpu else {})
    requests = {"memory": request} | ({"cpu": cpu} if cpu else {})
    return Step(
        verb="patch_resources",
        kind="Deployment",
        namespace="serving",
        name="feature-cache",
        params={"container": "redis", "requests": requests, "limits": limits, "env": {}},
    )


@pytest.mark.parametrize(
    ("version", "limit", "below", "refusal"),
    [
        ("1.33", "8Gi", False, "resize_memory_decrease_needs_restart_policy"),
        ("1.35", "2Gi", True, "resize_below_usage"),
        ("1.35", "8Gi", False, None),
    ],
)
async def test_setting_a_memory_limit_where_there_was_none_is_a_decrease_for_in_place_resize(
    make_gateway: Make, version: str, limit: str, below: bool, refusal: str | None
) -> None:
    gw, _ = await make_gateway(_cache(unlimited=True), sim_kw={"kube_version": version})
    view = await gw.get_cluster_view(NODE)
    pod = next(p for p in view.pods if p.name.startswith("feature-cache-"))
    assert "memory" not in next(c for c in pod.containers if c.name == "redis").limits
    step = _template(limit, "1Gi")
    assert in_place_refusal(view, pod, step, below_usage=below) == refusal


@pytest.mark.parametrize(
    ("version", "policy", "limit", "cpu", "below", "refusal"),
    [
        ("1.32", None, "8Gi", None, False, "resize_not_served"),
        ("1.33", None, "8Gi", None, False, "resize_memory_decrease_needs_restart_policy"),
        ("1.33", "RestartContainer", "8Gi", None, False, None),
        ("1.33", None, "16Gi", None, False, None),  # an increase is fine on 1.33
        ("1.35", None, "8Gi", None, False, None),
        ("1.35", None, "2Gi", None, True, "resize_below_usage"),
        ("1.35", "RestartContainer", "2Gi", None, True, None),
        ("1.35", None, "8Gi", "1", False, "resize_changes_qos"),  # Burstable -> Guaranteed
    ],
)
async def test_tier3_resizes_in_place_only_where_the_server_and_kubelet_can(
    make_gateway: Make,
    version: str,
    policy: str | None,
    limit: str,
    cpu: str | None,
    below: bool,
    refusal: str | None,
) -> None:
    gw, _ = await make_gateway(_cache(policy), sim_kw={"kube_version": version})
    view = await gw.get_cluster_view(NODE)
    assert view.in_place_resize is (version != "1.32")
    pod = next(p for p in view.pods if p.name.startswith("feature-cache-"))
    request = limit if cpu else "1Gi"
    step = _template(limit, request, cpu=cpu)
    assert in_place_refusal(view, pod, step, below_usage=below) == refusal
    values = Tier3Values(
        container="redis",
        memory_limit=limit,
        memory_request=request,
        memory_limit_bytes=int(limit[:-2]) * GI,
        below_working_set=below,
    )
    template = make_plan(NODE, 3, [step], values=values, warnings=["template_change_restarts_pods"])
    plan = in_place_plan(view, pod, template)
    if refusal is not None:
        assert plan is None
        return
    assert plan is not None and [s.verb for s in plan.steps] == ["resize_pod"]
    assert plan.target == f"Pod/{pod.key}" and "in_place_only_this_pod" in plan.warnings
    assert plan.restarts == ([pod.key] if policy == "RestartContainer" else [])
    for w in plan.warnings:
        sentence("warnings", w, {}, fmt="text", strict=True, locale="en")


async def test_an_in_place_resize_keeps_the_pod_and_undo_resizes_it_back(
    make_gateway: Make,
) -> None:
    gw, sim = await make_gateway(_cache())
    view = await gw.get_cluster_view(NODE)
    pod = next(p for p in view.pods if p.name.startswith("feature-cache-"))
    step = Step(
        verb="resize_pod",
        kind="Pod",
        namespace="serving",
        name=pod.name,
        params={"container": "redis", "requests": {"memory": "1Gi"}, "limits": {"memory": "8Gi"}},
    )
    result = await run_steps(gw, [step], dry_run=False)
    assert result.ok
    now = sim.get("pods", "serving", pod.name)
    assert now is not None and now["metadata"]["uid"] == pod.uid
    assert now["spec"]["containers"][0]["resources"]["limits"]["memory"] == "8Gi"
    assert any(
        path.endswith(f"/pods/{pod.name}/resize") for m, path, _ in sim.requests if m == "PATCH"
    )
    [undo] = undo_steps(step, result.changes[0].before)
    assert undo.verb == "resize_pod" and undo.params["limits"] == {"memory": "12Gi"}
    assert (await run_steps(gw, [undo], dry_run=False)).ok
    back = sim.get("pods", "serving", pod.name)
    assert (
        back is not None
        and back["spec"]["containers"][0]["resources"]["limits"]["memory"] == "12Gi"
    )


async def test_the_stand_in_refuses_a_memory_decrease_in_place_on_1_33_without_restart_policy(
    make_gateway: Make,
) -> None:
    gw, sim = await make_gateway(_cache(), sim_kw={"kube_version": "1.33"})
    name = next(p["metadata"]["name"] for p in sim.list("pods", "serving"))
    body = {"spec": {"containers": [{"name": "redis", "resources": {"limits": {"memory": "8Gi"}}}]}}
    with pytest.raises(ApiException) as info:
        await asyncio.to_thread(
            gw.transport.request,
            "PATCH",
            f"/api/v1/namespaces/serving/pods/{name}/resize",
            body=body,
            content_type="application/strategic-merge-patch+json",
        )
    assert info.value.status == 422
    assert "RestartContainer" in str(info.value.body)


@pytest.mark.parametrize(("limit", "verdict"), [("8Gi", "applied"), ("2Gi", "stalled")])
async def test_the_watch_reports_a_resize_applied_only_once_the_kubelet_actuated_it(
    make_gateway: Make, limit: str, verdict: str
) -> None:
    """From 1.34 the kubelet skips a memory limit under the container's usage (redis uses
    3 GiB) and keeps PodResizeInProgress with reason Error: the resize is not applied."""
    gw, _ = await make_gateway(_cache())
    view = await gw.get_cluster_view(NODE)
    pod = next(p for p in view.pods if p.name.startswith("feature-cache-"))
    await gw.resize_pod(
        "serving",
        pod.name,
        "redis",
        requests={"memory": "1Gi"},
        limits={"memory": limit},
        dry_run=False,
    )
    progress = await gw.resize_progress("serving", pod.name, "redis")
    assert judge(progress) == verdict
    if verdict == "stalled":
        assert "PodResizeInProgress: Error" in (progress.pods[0].reason or "")
        assert "exceeds desired limit" in (progress.pods[0].reason or "")
