"""The stand-in's scheduler, through the real client: a Deployment created over HTTP gets its
pod bound where kube-scheduler would bind it, or Pending with kube-scheduler's reasons."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from kubernetes import client

from gpunode_sandbox.kubesim import KubeSim
from tests.conftest import kube_client_config

GPU_TAINT = {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}


async def _place(sim: KubeSim, spec: dict[str, Any], *, taint_gpu_nodes: bool = False) -> Any:
    """Create a one-replica Deployment with ``spec``; its pod (bound or Pending)."""
    if taint_gpu_nodes:
        for name in ("gpu-node-01", "gpu-node-02"):
            node = sim.api.store.get("nodes", None, name)
            assert node is not None
            # a write, as a taint through the API is (stored objects are read-only)
            sim.api.store.put("nodes", {**node, "spec": {**node["spec"], "taints": [GPU_TAINT]}})
    api: Any = client.AppsV1Api(client.ApiClient(kube_client_config(sim.url)))
    container = {"name": "c", "image": "registry.example.com/x:1", **spec.pop("container", {})}
    body = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "probe", "namespace": "default"},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app": "probe"}},
            "template": {
                "metadata": {"labels": {"app": "probe"}},
                "spec": {"containers": [container], **spec},
            },
        },
    }
    await asyncio.to_thread(api.create_namespaced_deployment, "default", body)
    for _ in range(100):
        pods = [
            p for p in sim.list("pods", "default") if p["metadata"]["name"].startswith("probe-")
        ]
        if pods and (pods[0]["spec"].get("nodeName") or pods[0]["status"].get("conditions")):
            return pods[0]
        await asyncio.sleep(0.05)
    raise AssertionError("no probe pod")


def _event(sim: KubeSim, pod: Any) -> str:
    return next(
        e["message"]
        for e in sim.list("events", "default")
        if e["reason"] == "FailedScheduling"
        and e["involvedObject"]["name"] == pod["metadata"]["name"]
    )


def _required(
    kind: str, labels: dict[str, str], key: str, *, every: bool = False
) -> dict[str, Any]:
    term: dict[str, Any] = {"topologyKey": key, "labelSelector": {"matchLabels": labels}}
    if every:
        term["namespaceSelector"] = {}
    return {kind: {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}


GPU4 = {"resources": {"requests": {"nvidia.com/gpu": "4"}, "limits": {"nvidia.com/gpu": "4"}}}


@pytest.mark.parametrize(
    ("spec", "tainted", "node", "reason"),
    [
        # seed: gpu-node-01 has no GPU left, gpu-node-02 has 4 free
        ({"container": GPU4}, False, "gpu-node-02", None),
        (
            {
                "container": {
                    "resources": {
                        "requests": {"nvidia.com/gpu": "8"},
                        "limits": {"nvidia.com/gpu": "8"},
                    }
                }
            },
            False,
            None,
            "3 Insufficient nvidia.com/gpu",
        ),
        ({"container": GPU4}, True, None, "untolerated taint {nvidia.com/gpu: present}"),
        (
            {"container": GPU4, "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists"}]},
            True,
            "gpu-node-02",
            None,
        ),
        ({"nodeSelector": {"nodepool": "general"}}, False, "cpu-node-01", None),
        (
            {"nodeSelector": {"nodepool": "nowhere"}},
            False,
            None,
            "3 node(s) didn't match Pod's node affinity/selector",
        ),
        (
            {
                "affinity": {
                    "nodeAffinity": {
                        "requiredDuringSchedulingIgnoredDuringExecution": {
                            "nodeSelectorTerms": [
                                {
                                    "matchExpressions": [
                                        {
                                            "key": "nvidia.com/gpu.present",
                                            "operator": "NotIn",
                                            "values": ["true"],
                                        }
                                    ]
                                }
                            ]
                        }
                    }
                }
            },
            False,
            "cpu-node-01",
            None,
        ),
        (
            {"container": {"resources": {"requests": {"memory": "500Gi"}}}},
            False,
            None,
            "3 Insufficient memory",
        ),
        # required pod affinity to pods that run nowhere, and the probe is not one of them
        (
            {"affinity": _required("podAffinity", {"app": "nowhere"}, "kubernetes.io/hostname")},
            False,
            None,
            "3 node(s) didn't match pod affinity rules",
        ),
        # anti-affinity to the data team's pods (on gpu-node-01) in every namespace, per pool:
        # both GPU nodes share the pool gpu-h100, so only cpu-node-01 is left
        (
            {"affinity": _required("podAntiAffinity", {"team": "data"}, "nodepool", every=True)},
            False,
            "cpu-node-01",
            None,
        ),
    ],
)
async def test_the_scheduler_binds_where_requests_taints_and_affinity_allow(
    make_kubesim: Callable[..., Awaitable[KubeSim]],
    spec: dict[str, Any],
    tainted: bool,
    node: str | None,
    reason: str | None,
) -> None:
    sim = await make_kubesim("seed")
    pod = await _place(sim, dict(spec), taint_gpu_nodes=tainted)
    assert pod["spec"].get("nodeName") == node
    if reason is None:
        assert pod["status"]["phase"] == "Running"
    else:
        assert pod["status"]["phase"] == "Pending"
        message = _event(sim, pod)
        assert message.startswith("0/3 nodes are available: ") and reason in message
        [cond] = pod["status"]["conditions"]
        assert (cond["type"], cond["status"], cond["reason"]) == (
            "PodScheduled",
            "False",
            "Unschedulable",
        )


def _spread(when: str = "DoNotSchedule", **extra: Any) -> dict[str, Any]:
    return {
        "maxSkew": 1,
        "topologyKey": "nodepool",
        "whenUnsatisfiable": when,
        "labelSelector": {"matchLabels": {"app": "probe"}},
        **extra,
    }


async def _probe_pods_elsewhere(sim: KubeSim, count: int, node: str) -> None:
    for i in range(count):
        sim.api.seed(
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {
                    "name": f"old-{i}",
                    "namespace": "default",
                    "labels": {"app": "probe"},
                },
                "spec": {"nodeName": node, "containers": [{"name": "c", "image": "x:1"}]},
                "status": {"phase": "Running"},
            }
        )


async def test_a_do_not_schedule_spread_constraint_keeps_the_pod_off_the_fuller_domain(
    make_kubesim: Callable[..., Awaitable[KubeSim]],
) -> None:
    """Pools: gpu-h100 (2 nodes) holds 2 probe pods, general (cpu-node-01) none: with
    maxSkew 1 the pod goes to general, whatever the free memory says."""
    sim = await make_kubesim("seed")
    await _probe_pods_elsewhere(sim, 2, "gpu-node-02")
    pod = await _place(sim, {"topologySpreadConstraints": [_spread()]})
    assert pod["spec"]["nodeName"] == "cpu-node-01"


async def test_a_spread_that_no_node_satisfies_leaves_the_pod_pending_in_the_schedulers_words(
    make_kubesim: Callable[..., Awaitable[KubeSim]],
) -> None:
    sim = await make_kubesim("seed")
    await _probe_pods_elsewhere(sim, 2, "gpu-node-02")
    spec = {"topologySpreadConstraints": [_spread()], "nodeSelector": {"nodepool": "gpu-h100"}}
    # nodeAffinityPolicy Honor: general is no domain for this pod; the only domain holds 2,
    # so the minimum is 2 and gpu-h100 is at skew 1: it fits
    pod = await _place(sim, spec)
    assert pod["spec"].get("nodeName") in ("gpu-node-01", "gpu-node-02")


async def test_min_domains_above_the_domain_count_makes_the_minimum_zero(
    make_kubesim: Callable[..., Awaitable[KubeSim]],
) -> None:
    sim = await make_kubesim("seed")
    await _probe_pods_elsewhere(sim, 1, "gpu-node-02")
    await _probe_pods_elsewhere(sim, 0, "cpu-node-01")
    spec = {
        "topologySpreadConstraints": [_spread(minDomains=3)],
        "nodeSelector": {"nodepool": "gpu-h100"},
    }
    pod = await _place(sim, spec)
    assert not pod["spec"].get("nodeName")
    assert "didn't match pod topology spread constraints" in _event(sim, pod)


async def test_schedule_anyway_never_keeps_a_pod_off_a_node(
    make_kubesim: Callable[..., Awaitable[KubeSim]],
) -> None:
    sim = await make_kubesim("seed")
    await _probe_pods_elsewhere(sim, 1, "gpu-node-02")
    spec = {
        "topologySpreadConstraints": [_spread("ScheduleAnyway", minDomains=3)],
        "nodeSelector": {"nodepool": "gpu-h100"},
    }
    pod = await _place(sim, spec)
    assert pod["spec"].get("nodeName")


@pytest.mark.parametrize(
    ("version", "affinity_merged", "spread_merged"),
    [("1.31", True, False), ("1.32", True, False), ("1.33", True, True), ("1.35", True, True)],
)
async def test_the_api_server_merges_match_label_keys_into_selectors_from_its_version(
    make_kubesim: Callable[..., Awaitable[KubeSim]],
    version: str,
    affinity_merged: bool,
    spread_merged: bool,
) -> None:
    sim = await make_kubesim("seed", kube_version=version)
    term = {
        "topologyKey": "kubernetes.io/hostname",
        "labelSelector": {"matchLabels": {"app": "probe"}},
        "matchLabelKeys": ["pod-template-hash"],
        "mismatchLabelKeys": ["app"],
    }
    spec = {
        "affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}},
        "topologySpreadConstraints": [_spread(matchLabelKeys=["pod-template-hash"])],
    }
    pod = await _place(sim, spec)
    hash_ = pod["metadata"]["labels"]["pod-template-hash"]
    stored = (
        pod["spec"]["affinity"]["podAntiAffinity"][
            "requiredDuringSchedulingIgnoredDuringExecution"
        ][0]["labelSelector"].get("matchExpressions")
        or []
    )
    assert (
        stored
        == [
            {"key": "pod-template-hash", "operator": "In", "values": [hash_]},
            {"key": "app", "operator": "NotIn", "values": ["probe"]},
        ]
    ) is affinity_merged
    spread = pod["spec"]["topologySpreadConstraints"][0]["labelSelector"]
    assert bool(spread.get("matchExpressions")) is spread_merged
