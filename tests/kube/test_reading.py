"""The cluster view, read through the real client from the Kubernetes stand-in."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
import yaml

from bot.config import KubeSettings
from bot.core.diagnosis.allocation import describe_allocated
from bot.errors import ConfigError, NotFoundError
from bot.kube.gateway import Gateway
from gpunode_sandbox.kubesim import KubeSim
from gpunode_sandbox.kubesim.access import BOT_TOKEN
from tests.kube.conftest import settings_for


async def test_gpu_nodes_are_the_nodes_with_gpus_in_allocatable(
    gateway: tuple[Gateway, KubeSim],
) -> None:
    gw, _ = gateway
    nodes = await gw.list_gpu_nodes()
    assert [n.name for n in nodes] == ["gpu-node-01", "gpu-node-02"]
    assert nodes[0].gpu_product == "NVIDIA-H100-80GB-HBM3"
    assert nodes[0].allocatable["nvidia.com/gpu"] == "8"


async def test_gpu_node_loads_read_the_fleet_once_and_match_each_nodes_cluster_view(
    gateway: tuple[Gateway, KubeSim],
) -> None:
    gw, sim = gateway
    sim.requests.clear()
    loads = await gw.gpu_node_loads()
    pod_lists = [r for r in sim.requests if r[0] == "GET" and r[1] == "/api/v1/pods"]
    assert len(pod_lists) == 1  # one list of all pods, not one per node
    assert [load.node.name for load in loads] == ["gpu-node-01", "gpu-node-02"]
    view = await gw.get_cluster_view("gpu-node-01")
    assert loads[0].allocated == view.allocated
    assert view.metrics is not None
    assert loads[0].working_set_bytes == sum(m.memory_working_set_bytes for m in view.metrics)


async def test_cluster_view_allocation_matches_kubectl_on_the_same_objects(
    gateway: tuple[Gateway, KubeSim],
) -> None:
    gw, sim = gateway
    view = await gw.get_cluster_view("gpu-node-01")
    node = sim.get("nodes", None, "gpu-node-01")
    assert node is not None
    pods = [
        p
        for p in sim.list("pods")
        if p["spec"].get("nodeName") == "gpu-node-01"
        and p["status"].get("phase") not in ("Succeeded", "Failed")
    ]
    pods.sort(key=lambda p: (p["metadata"]["namespace"], p["metadata"]["name"]))
    assert view.allocated_text == describe_allocated(node, pods)
    assert "  memory             128Gi (85%)   150Gi (99%)\n" in view.allocated_text
    memory = next(r for r in view.allocated if r.resource == "memory")
    assert (memory.requests_percent, memory.limits_percent) == (85, 99)


async def test_cluster_view_resolves_owner_chains_to_the_top_controller(
    gateway: tuple[Gateway, KubeSim],
) -> None:
    gw, _ = gateway
    view = await gw.get_cluster_view("gpu-node-01")
    owners = {p.name.split("-")[0]: [o.kind for o in p.owners] for p in view.pods}
    assert owners["preprocess"] == ["ReplicaSet", "Deployment"]
    assert owners["train"] == ["StatefulSet"]
    assert owners["jupyter"] == []
    trainer = next(p for p in view.pods if p.name.startswith("train-llm"))
    assert trainer.top_owner is not None and trainer.top_owner.name == "train-llm"
    assert trainer.gpu_request == 8
    assert trainer.memory_request_bytes == 68 * 2**30
    assert trainer.qos_class == "burstable"
    notebook = next(p for p in view.pods if p.name == "jupyter-alice")
    assert notebook.memory_limit_bytes is None
    dcgm = next(p for p in view.pods if p.name.startswith("nvidia-dcgm"))
    assert dcgm.is_daemonset and dcgm.priority_class_name == "system-node-critical"
    assert all(
        c.container_id is None or len(c.container_id) == 64 for p in view.pods for c in p.containers
    )


async def test_cluster_view_has_node_and_pod_events_and_metrics(
    gateway: tuple[Gateway, KubeSim],
) -> None:
    gw, _ = gateway
    view = await gw.get_cluster_view("gpu-node-01")
    reasons = {(e.involved_kind, e.reason) for e in view.events}
    assert {("Node", "OOMKilling"), ("Pod", "BackOff")} <= reasons
    assert view.metrics is not None
    assert {m.name for m in view.metrics} <= {p.name for p in view.pods}
    assert any(m.memory_working_set_bytes > 0 for m in view.metrics)
    assert "batch-low" in {c.name for c in view.priority_classes}
    assert view.server_version and view.server_version.startswith("v1.")


async def test_metrics_are_none_when_the_metrics_api_fails(
    gateway: tuple[Gateway, KubeSim],
) -> None:
    gw, sim = gateway
    sim.faults.add("GET", r"^/apis/metrics\.k8s\.io/", status=503, times=-1)
    view = await gw.get_cluster_view("gpu-node-01")
    assert view.metrics is None


async def test_an_unknown_node_is_not_found(gateway: tuple[Gateway, KubeSim]) -> None:
    gw, _ = gateway
    with pytest.raises(NotFoundError, match="gpu-node-99"):
        await gw.get_cluster_view("gpu-node-99")


async def test_server_mode_sends_the_bearer_token(gateway: tuple[Gateway, KubeSim]) -> None:
    gw, sim = gateway
    await gw.list_gpu_nodes()
    assert sim.tokens and set(sim.tokens) == {BOT_TOKEN}


async def test_kubeconfig_mode_uses_the_named_context(kubesim: KubeSim, tmp_path: Path) -> None:
    kubeconfig = {
        "apiVersion": "v1",
        "kind": "Config",
        "current-context": "wrong",
        "clusters": [
            {"name": "sim", "cluster": {"server": kubesim.url}},
            {"name": "nowhere", "cluster": {"server": "http://127.0.0.1:9"}},
        ],
        "users": [{"name": "u", "user": {"token": BOT_TOKEN}}],
        "contexts": [
            {"name": "sim", "context": {"cluster": "sim", "user": "u"}},
            {"name": "wrong", "context": {"cluster": "nowhere", "user": "u"}},
        ],
    }
    path = tmp_path / "kubeconfig"
    path.write_text(yaml.safe_dump(kubeconfig))
    gw = Gateway.from_settings(KubeSettings(mode="kubeconfig", kubeconfig=str(path), context="sim"))
    try:
        assert len(await gw.list_gpu_nodes()) == 2
    finally:
        gw.close()


@pytest.mark.parametrize(
    "settings",
    [
        KubeSettings(mode="server"),
        KubeSettings(mode="kubeconfig", kubeconfig="/nonexistent/kubeconfig"),
        KubeSettings(mode="in_cluster"),
    ],
)
def test_bad_configuration_is_a_config_error(settings: KubeSettings) -> None:
    with pytest.raises(ConfigError):
        Gateway.from_settings(settings)


async def test_reads_run_concurrently_without_blocking_the_loop(
    gateway: tuple[Gateway, KubeSim],
) -> None:
    gw, _ = gateway
    views = await asyncio.gather(*(gw.get_cluster_view("gpu-node-01") for _ in range(3)))
    assert len({v.allocated_text for v in views}) == 1


def test_settings_helper_points_at_the_sim() -> None:
    assert settings_for("http://x").server == "http://x"


async def test_metrics_are_none_when_the_server_does_not_serve_the_group(
    gateway: tuple[Gateway, KubeSim],
) -> None:
    gw, sim = gateway
    before = len(sim.requests)
    assert await gw._metrics({"apps": "v1", "batch": "v1"}) is None
    assert len(sim.requests) == before
