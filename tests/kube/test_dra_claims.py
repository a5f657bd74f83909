"""DRA pods through the real gateway over the stand-in: the bot reads the ResourceClaims of the
pods that claim devices (resource.k8s.io, the newest version served) and knows which devices
(driver, pool, device) each holds; a claim holding a GPU driver's device makes a GPU pod, one
holding only another driver's does not, and a claim the bot may not read is presumed a GPU."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from bot.core.model.cluster import ClaimedDevice
from gpunode_sandbox.kubesim import Scenario, load_scenario

Make = Callable[..., Awaitable[tuple[Any, Any]]]
NODE = "dra-node-01"


async def _trainer(gw: Any) -> Any:
    view = await gw.get_cluster_view(NODE)
    [pod] = [p for p in view.pods if p.name.startswith("train-dra")]
    return pod


async def test_a_dra_pod_knows_the_gpus_its_claim_holds(make_gateway: Make) -> None:
    gw, sim = await make_gateway("gpu-dra")
    pod = await _trainer(gw)
    [claim] = [c["metadata"]["name"] for c in sim.api.store.list("resourceclaims")]
    assert pod.dra_devices == [
        ClaimedDevice(claim=claim, driver="gpu.nvidia.com", pool=NODE, device=f"gpu-{i}")
        for i in range(4)
    ]
    assert pod.accelerated and len(pod.gpu_devices) == 4
    listed = [r for r in sim.requests if r[1].endswith("/resourceclaims")]
    assert listed and all(r[1].startswith("/apis/resource.k8s.io/v1/") for r in listed)


def _nic_claims() -> Scenario:
    """gpu-dra with the driver a network driver instead (its slices and the pod's claim)."""
    base: dict[str, Any] = load_scenario("gpu-dra").model_dump(mode="json")
    base.pop("expected", None)
    for node in base["nodes"]:
        node["resource_slices"] = [{"driver": "sriov.net.example.com", "devices": 4}]
    return Scenario.model_validate(base)


async def test_a_pod_whose_claims_hold_no_gpu_is_not_a_gpu_pod(make_gateway: Make) -> None:
    gw, _sim = await make_gateway(_nic_claims())
    pod = await _trainer(gw)
    assert pod.dra_devices and {d.driver for d in pod.dra_devices} == {"sriov.net.example.com"}
    assert not pod.accelerated and pod.gpu_devices == []


async def test_claims_the_bot_may_not_read_leave_the_pod_a_presumed_gpu_pod(
    make_gateway: Make,
) -> None:
    gw, sim = await make_gateway(_nic_claims())
    sim.faults.add("GET", "/resourceclaims", status=403, times=-1)
    pod = await _trainer(gw)
    assert pod.dra_devices is None and pod.resource_claims == ["gpus"]
    assert pod.accelerated  # unknown devices: presumed a GPU, as before claims were read


async def test_a_server_without_v1_claims_is_asked_the_older_versions_in_turn(
    make_gateway: Make,
) -> None:
    gw, sim = await make_gateway("gpu-dra")
    sim.faults.add(
        "GET", "/apis/resource.k8s.io/v1/namespaces/.*/resourceclaims", status=404, times=-1
    )
    pod = await _trainer(gw)
    tried = [r[1].split("/")[3] for r in sim.requests if r[1].endswith("/resourceclaims")]
    assert tried == ["v1", "v1beta2", "v1beta1"]  # 1.34, 1.33, 1.32; the stand-in serves v1
    assert pod.dra_devices is None and pod.accelerated


async def test_no_claims_no_claim_reads(make_gateway: Make) -> None:
    gw, sim = await make_gateway("gpu-mig-mixed")
    await gw.get_cluster_view("mig-node-01")
    assert not [r for r in sim.requests if "resourceclaims" in r[1]]
