"""The stand-in speaks the API to the official kubernetes client over real HTTP."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from gpunode_sandbox.kubesim import KubeSim
from gpunode_sandbox.kubesim.access import ADMIN_TOKEN
from tests.conftest import kube_client_config


def apis(sim: KubeSim) -> Any:
    api = client.ApiClient(kube_client_config(sim.url))
    return (
        client.CoreV1Api(api),
        client.AppsV1Api(api),
        client.BatchV1Api(api),
        client.PolicyV1Api(api),
        client.SchedulingV1Api(api),
        client.CustomObjectsApi(api),
    )


def status_of(exc: ApiException) -> dict[str, Any]:
    body: dict[str, Any] = json.loads(exc.body or "")
    assert body["kind"] == "Status" and body["apiVersion"] == "v1"
    assert body["status"] == "Failure" and body["code"] == exc.status
    return body


async def call(fn: Any, *args: Any, **kw: Any) -> Any:
    return await asyncio.to_thread(fn, *args, **kw)


@pytest.mark.parametrize(
    ("field_selector", "label_selector", "expected"),
    [
        ("spec.nodeName=gpu-node-01,status.phase!=Succeeded,status.phase!=Failed", None, 7),
        ("metadata.name=train-llm-0", None, 1),
        (None, "app in (jupyter,redis)", 2),
        (None, "owner=alice", 1),
        (None, "owner!=alice,app=fluent-bit", 3),
        (None, "!owner,team", 2),
        ("spec.nodeName=cpu-node-01", "k8s-app notin (kube-dns)", 1),
    ],
)
async def test_pod_lists_honour_field_and_label_selectors(
    kubesim: KubeSim, field_selector: str | None, label_selector: str | None, expected: int
) -> None:
    v1 = apis(kubesim)[0]
    pods = await call(
        v1.list_pod_for_all_namespaces, field_selector=field_selector, label_selector=label_selector
    )
    assert len(pods.items) == expected


async def test_events_filter_by_involved_object(kubesim: KubeSim) -> None:
    v1 = apis(kubesim)[0]
    evs = await call(
        v1.list_event_for_all_namespaces,
        field_selector="involvedObject.name=gpu-node-01,involvedObject.kind=Node",
    )
    # the seed's kills are cgroup-limit kills: NPD's OOMKilling only, no kubelet SystemOOM
    assert {e.reason for e in evs.items} == {"OOMKilling"}
    assert all(e.involved_object.uid == "gpu-node-01" for e in evs.items)
    assert all(e.source.component == "kernel-monitor" for e in evs.items)


async def test_discovery_lists_subresources(kubesim: KubeSim) -> None:
    v1 = apis(kubesim)[0]
    names = {r.name for r in (await call(v1.get_api_resources)).resources}
    assert {"pods/eviction", "pods/log", "pods/resize", "nodes/status"} <= names
    groups = client.ApisApi(client.ApiClient(kube_client_config(kubesim.url)))
    found = {g.name for g in (await call(groups.get_api_versions)).groups}
    assert {"apps", "batch", "policy", "scheduling.k8s.io", "metrics.k8s.io"} <= found


PATCHES = [
    (
        "application/merge-patch+json",
        {
            "spec": {
                "template": {
                    "spec": {
                        "containers": [
                            {
                                "name": "pandas",
                                "image": "x:1",
                                "resources": {"limits": {"memory": "32Gi"}},
                            }
                        ]
                    }
                }
            }
        },
    ),
    (
        "application/strategic-merge-patch+json",
        {
            "spec": {
                "template": {
                    "spec": {
                        "containers": [
                            {
                                "name": "pandas",
                                "resources": {"limits": {"memory": "32Gi"}},
                                "env": [{"name": "OMP_NUM_THREADS", "value": "4"}],
                            }
                        ]
                    }
                }
            }
        },
    ),
    (
        "application/json-patch+json",
        [
            {
                "op": "replace",
                "path": "/spec/template/spec/containers/0/resources/limits/memory",
                "value": "32Gi",
            }
        ],
    ),
]


@pytest.mark.parametrize(("content_type", "body"), PATCHES)
async def test_each_patch_kind_changes_the_deployment_and_rolls_its_pods(
    kubesim: KubeSim, content_type: str, body: Any
) -> None:
    api = client.ApiClient(kube_client_config(kubesim.url))
    apps = client.AppsV1Api(api)
    before = kubesim.list("pods", "data-prep")
    api.set_default_header("Content-Type", content_type)
    out = await call(
        apps.patch_namespaced_deployment,
        "preprocess",
        "data-prep",
        body,
        _content_type=content_type,
    )
    c = out.spec.template.spec.containers[0]
    assert c.resources.limits["memory"] == "32Gi"
    if content_type == "application/strategic-merge-patch+json":
        assert c.image.startswith("registry.example.com") and c.env[0].value == "4"
    old = {p["metadata"]["name"] for p in before}
    for _ in range(200):  # the rollout runs after the patch is answered, as a controller does
        after = kubesim.list("pods", "data-prep")
        if after and {p["metadata"]["name"] for p in after}.isdisjoint(old):
            break
        await asyncio.sleep(0.05)
    assert {p["metadata"]["name"] for p in after}.isdisjoint(old)
    assert after[0]["spec"]["containers"][0]["resources"]["limits"]["memory"] == "32Gi"


async def test_dry_run_changes_nothing(kubesim: KubeSim) -> None:
    v1 = apis(kubesim)[0]
    rv = kubesim.api.store.rv
    await call(v1.patch_node, "gpu-node-01", {"spec": {"unschedulable": True}}, dry_run="All")
    await call(v1.delete_namespaced_pod, "jupyter-alice", "research", dry_run="All")
    await call(v1.create_namespace, {"metadata": {"name": "scratch"}}, dry_run="All")
    await call(
        v1.create_namespaced_pod_eviction,
        "train-llm-0",
        "ml-train",
        {"metadata": {"name": "train-llm-0"}},
        dry_run="All",
    )
    assert kubesim.api.store.rv == rv
    assert kubesim.get("pods", "research", "jupyter-alice") is not None
    assert not (kubesim.get("nodes", None, "gpu-node-01") or {})["spec"].get("unschedulable")


async def test_stale_resource_version_is_a_409_conflict(kubesim: KubeSim) -> None:
    v1 = apis(kubesim)[0]
    node = await call(v1.read_node, "gpu-node-02")
    stale = node.metadata.resource_version
    await call(v1.patch_node, "gpu-node-02", {"metadata": {"labels": {"a": "b"}}})
    with pytest.raises(ApiException) as err:
        await call(
            v1.patch_node,
            "gpu-node-02",
            {"metadata": {"resourceVersion": stale, "labels": {"a": "c"}}},
        )
    body = status_of(err.value)
    assert body["reason"] == "Conflict" and "has been modified" in body["message"]


async def test_schema_invalid_object_is_a_422(kubesim: KubeSim) -> None:
    v1 = apis(kubesim)[0]
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "bad"},
        "spec": {"containers": [{"name": "c", "image": "i", "memoryLimit": "1Gi"}]},
    }
    # the client validates bodies itself, so send the raw request
    import aiohttp

    async with (
        aiohttp.ClientSession() as http,
        http.post(
            f"{kubesim.url}/api/v1/namespaces/default/pods",
            json=pod,
            headers={"Authorization": f"Bearer {ADMIN_TOKEN}"},
        ) as resp,
    ):
        body = await resp.json()
    assert resp.status == 422 and body["kind"] == "Status" and body["code"] == 422
    assert body["reason"] == "Invalid" and "memoryLimit" in body["message"]
    assert (await call(v1.list_namespaced_pod, "default")).items == []
    assert kubesim.get("pods", "default", "bad") is None


async def test_pod_spec_is_immutable_except_allowed_fields(kubesim: KubeSim) -> None:
    v1 = apis(kubesim)[0]
    with pytest.raises(ApiException) as err:
        await call(
            v1.patch_namespaced_pod,
            "train-llm-0",
            "ml-train",
            {"spec": {"priorityClassName": "system-node-critical"}},
        )
    assert err.value.status == 422
    assert "pod updates may not change fields other than" in status_of(err.value)["message"]
    out = await call(
        v1.patch_namespaced_pod,
        "train-llm-0",
        "ml-train",
        {"spec": {"activeDeadlineSeconds": 3600}},
    )
    assert out.spec.active_deadline_seconds == 3600


async def test_priority_class_value_is_immutable_and_builtins_exist(kubesim: KubeSim) -> None:
    sched = apis(kubesim)[4]
    names = {p.metadata.name: p.value for p in (await call(sched.list_priority_class)).items}
    assert names["system-node-critical"] == 2_000_001_000
    await call(
        sched.create_priority_class, {"metadata": {"name": "training-critical"}, "value": 1_000_000}
    )
    with pytest.raises(ApiException) as err:
        await call(sched.patch_priority_class, "training-critical", {"value": 5})
    assert err.value.status == 422


async def test_cordon_adds_the_unschedulable_taint(kubesim: KubeSim) -> None:
    v1 = apis(kubesim)[0]
    node = await call(v1.patch_node, "gpu-node-01", {"spec": {"unschedulable": True}})
    assert [(t.key, t.effect) for t in node.spec.taints] == [
        ("node.kubernetes.io/unschedulable", "NoSchedule")
    ]
    node = await call(v1.patch_node, "gpu-node-01", {"spec": {"unschedulable": False}})
    assert not node.spec.taints


async def test_eviction_blocked_by_pdb_is_429_with_budget_cause(kubesim: KubeSim) -> None:
    v1, *_, policy, _s, _c = apis(kubesim)
    with pytest.raises(ApiException) as err:
        await call(
            v1.create_namespaced_pod_eviction,
            "jupyter-alice",
            "research",
            {"metadata": {"name": "jupyter-alice", "namespace": "research"}},
        )
    body = status_of(err.value)
    assert err.value.status == 429 and body["reason"] == "TooManyRequests"
    assert body["details"]["causes"] == [
        {
            "reason": "DisruptionBudget",
            "message": "The disruption budget jupyter-alice needs 1 healthy pods and has 1 "
            "currently",
        }
    ]
    pdb = await call(policy.read_namespaced_pod_disruption_budget, "jupyter-alice", "research")
    assert pdb.status.disruptions_allowed == 0 and pdb.status.current_healthy == 1


async def test_two_pdbs_make_eviction_a_500(kubesim: KubeSim) -> None:
    v1, *_, policy, _s, _c = apis(kubesim)
    await call(
        policy.create_namespaced_pod_disruption_budget,
        "research",
        {
            "metadata": {"name": "second"},
            "spec": {"maxUnavailable": 1, "selector": {"matchLabels": {"app": "jupyter"}}},
        },
    )
    with pytest.raises(ApiException) as err:
        await call(
            v1.create_namespaced_pod_eviction,
            "jupyter-alice",
            "research",
            {"metadata": {"name": "jupyter-alice"}},
        )
    assert err.value.status == 500
    assert "more than one PodDisruptionBudget" in status_of(err.value)["message"]


async def test_eviction_without_pdb_deletes_and_the_replicaset_replaces(kubesim: KubeSim) -> None:
    v1 = apis(kubesim)[0]
    await call(v1.patch_node, "gpu-node-01", {"spec": {"unschedulable": True}})
    name = kubesim.list("pods", "data-prep")[0]["metadata"]["name"]
    await call(v1.create_namespaced_pod_eviction, name, "data-prep", {"metadata": {"name": name}})
    pods = kubesim.list("pods", "data-prep")
    assert [p["metadata"]["name"] for p in pods] != [name] and len(pods) == 1
    assert pods[0]["spec"]["nodeName"] != "gpu-node-01"


@pytest.mark.parametrize(("version", "allowed"), [("1.32", False), ("1.35", True)])
async def test_resize_subresource_exists_from_1_33(
    make_kubesim: Any, version: str, allowed: bool
) -> None:
    sim = await make_kubesim("seed", kube_version=version)
    v1 = apis(sim)[0]
    patch = {
        "spec": {"containers": [{"name": "redis", "resources": {"limits": {"memory": "6Gi"}}}]}
    }
    name = sim.list("pods", "serving")[0]["metadata"]["name"]
    if allowed:
        out = await call(v1.patch_namespaced_pod_resize, name, "serving", patch)
        assert out.spec.containers[0].resources.limits["memory"] == "6Gi"
    else:
        with pytest.raises(ApiException) as err:
            await call(v1.patch_namespaced_pod_resize, name, "serving", patch)
        assert err.value.status == 404


async def test_watch_streams_added_modified_deleted(kubesim: KubeSim) -> None:
    from kubernetes import watch

    v1 = apis(kubesim)[0]
    rv = (await call(v1.list_namespaced_pod, "research")).metadata.resource_version

    def collect() -> list[tuple[str, str]]:
        w = watch.Watch()
        seen = []
        for ev in w.stream(
            v1.list_namespaced_pod, "research", resource_version=rv, timeout_seconds=2
        ):
            seen.append((ev["type"], ev["object"].metadata.name))
            if ev["type"] == "DELETED":
                w.stop()
        return seen

    task = asyncio.create_task(asyncio.to_thread(collect))
    await asyncio.sleep(0.3)
    await call(
        v1.create_namespaced_pod,
        "research",
        {"metadata": {"name": "w1"}, "spec": {"containers": [{"name": "c", "image": "i:1"}]}},
    )
    await call(v1.patch_namespaced_pod, "w1", "research", {"metadata": {"labels": {"x": "y"}}})
    await call(v1.delete_namespaced_pod, "w1", "research")
    assert await task == [("ADDED", "w1"), ("MODIFIED", "w1"), ("DELETED", "w1")]


async def test_fault_injection_answers_status_then_clears(kubesim: KubeSim) -> None:
    v1 = apis(kubesim)[0]
    kubesim.faults.add("GET", r"/api/v1/nodes/gpu-node-01$", status=503, reason="etcd down")
    with pytest.raises(ApiException) as err:
        await call(v1.read_node, "gpu-node-01")
    assert status_of(err.value)["message"] == "etcd down"
    assert (await call(v1.read_node, "gpu-node-01")).metadata.name == "gpu-node-01"
    assert ("GET", "/api/v1/nodes/gpu-node-01", "") in kubesim.requests
    assert ADMIN_TOKEN in kubesim.tokens


async def test_metrics_api_serves_node_and_pod_usage(kubesim: KubeSim) -> None:
    custom = apis(kubesim)[5]
    nodes = await call(custom.list_cluster_custom_object, "metrics.k8s.io", "v1beta1", "nodes")
    assert {n["metadata"]["name"] for n in nodes["items"]} == {
        "gpu-node-01",
        "gpu-node-02",
        "cpu-node-01",
    }
    pods = await call(
        custom.list_namespaced_custom_object, "metrics.k8s.io", "v1beta1", "data-prep", "pods"
    )
    mem_ki = int(pods["items"][0]["containers"][0]["usage"]["memory"].removesuffix("Ki"))
    assert 61 * 2**20 < mem_ki < 62 * 2**20  # ~62 of 64 GiB working set
