"""Host trees follow the pods on the node now: evictions and limit cuts show in /proc."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client

from gpunode_sandbox.kubesim import KubeSim, Scenario, list_scenarios, load_scenario
from gpunode_sandbox.kubesim.hosttree import write_host_tree
from gpunode_sandbox.kubesim.usage import ZERO, add, figures, starting_figures
from tests.conftest import kube_client_config

KIB = 1024
GIB = 2**30
PARTS = (
    "MemFree",
    "AnonPages",
    "Cached",
    "Buffers",
    "Slab",
    "KernelStack",
    "PageTables",
    "Percpu",
    "VmallocUsed",
)


def socket_bytes(root: Path) -> int:
    """TCP + UDP ``mem`` pages of ``proc/net/sockstat``, in bytes (in no meminfo line)."""
    pages = 0
    for line in (root / "proc/net/sockstat").read_text().splitlines():
        fields = line.split()
        if fields[0] in ("TCP:", "UDP:"):
            pages += int(fields[fields.index("mem") + 1])
    return pages * 4096


def host(sim: KubeSim, node: str, root: Path) -> tuple[dict[str, int], dict[str, float]]:
    """(meminfo in bytes, PSI ``some_avg10``-style keys) of a freshly written host tree."""
    write_host_tree(sim, node, root)
    mem = {}
    for line in (root / "proc/meminfo").read_text().splitlines():
        key, rest = line.split(":", 1)
        mem[key] = int(rest.split()[0]) * (KIB if rest.strip().endswith("kB") else 1)
    psi = {}
    for line in (root / "proc/pressure/memory").read_text().splitlines():
        kind, *fields = line.split()
        for f in fields:
            k, v = f.split("=")
            if k != "total":
                psi[f"{kind}_{k}"] = float(v)
    return mem, psi


def core_v1(sim: KubeSim) -> Any:
    return client.CoreV1Api(client.ApiClient(kube_client_config(sim.url)))


def working_set(sim: KubeSim, namespace: str, name: str) -> int:
    pod = sim.api.store.get("pods", namespace, name)
    assert pod is not None
    return sum(f.working_set for f in figures(sim, pod).values())


@pytest.mark.parametrize(
    ("namespace", "prefix"),
    [("data-prep", "preprocess-"), ("research", "jupyter-bob")],
)
async def test_evicting_a_pod_raises_mem_available_by_about_its_working_set(
    kubesim: KubeSim, tmp_path: Path, namespace: str, prefix: str
) -> None:
    v1 = core_v1(kubesim)
    # cordoned, so the replacement of a controller's pod does not land on the same node
    await asyncio.to_thread(v1.patch_node, "gpu-node-01", {"spec": {"unschedulable": True}})
    name = next(
        p["metadata"]["name"]
        for p in kubesim.list("pods", namespace)
        if p["metadata"]["name"].startswith(prefix)
    )
    ws = working_set(kubesim, namespace, name)
    before, psi_before = host(kubesim, "gpu-node-01", tmp_path / "before")
    body = {"metadata": {"name": name}}
    await asyncio.to_thread(v1.create_namespaced_pod_eviction, name, namespace, body)
    assert kubesim.get("pods", namespace, name) is None
    after, psi_after = host(kubesim, "gpu-node-01", tmp_path / "after")
    rise = after["MemAvailable"] - before["MemAvailable"]
    # its anon pages come back in full; its page cache was already counted as available and
    # its kernel memory stays in the node's kernel figures: a few percent less than its WSS
    assert 0.95 * ws <= rise <= ws
    assert after["MemFree"] > before["MemFree"]
    for m, root in ((before, tmp_path / "before"), (after, tmp_path / "after")):
        assert sum(m[p] for p in PARTS) + socket_bytes(root) == m["MemTotal"]
        assert m["Active(file)"] + m["Inactive(file)"] == m["Cached"] - m["Shmem"] + m["Buffers"]
    assert psi_after["some_avg10"] < psi_before["some_avg10"] == 38.12


async def test_evicting_the_offender_ends_the_memory_stall(
    kubesim: KubeSim, tmp_path: Path
) -> None:
    v1 = core_v1(kubesim)
    await asyncio.to_thread(v1.patch_node, "gpu-node-01", {"spec": {"unschedulable": True}})
    for pod in kubesim.list("pods", "data-prep"):
        name = pod["metadata"]["name"]
        body = {"metadata": {"name": name}}
        await asyncio.to_thread(v1.create_namespaced_pod_eviction, name, "data-prep", body)
    mem, psi = host(kubesim, "gpu-node-01", tmp_path)
    assert mem["MemAvailable"] > 0.10 * mem["MemTotal"]
    assert set(psi.values()) == {0.0}


async def test_a_limit_cut_by_resize_frees_what_the_pod_can_no_longer_hold(
    make_kubesim: Any, tmp_path: Path
) -> None:
    """The container's memory resizePolicy is RestartContainer: the kubelet restarts it under
    the new limit (with NotRequired it would skip a limit under its usage, see below)."""
    raw = load_scenario("seed").model_dump(mode="json")
    for w in raw["workloads"]:
        if w["name"] == "preprocess":
            w["containers"][0]["resize_policy"] = {"memory": "RestartContainer"}
    kubesim = await make_kubesim(Scenario.model_validate(raw))
    v1 = core_v1(kubesim)
    name = kubesim.list("pods", "data-prep")[0]["metadata"]["name"]
    ws = working_set(kubesim, "data-prep", name)
    before, _ = host(kubesim, "gpu-node-01", tmp_path / "before")
    patch = {
        "spec": {"containers": [{"name": "pandas", "resources": {"limits": {"memory": "32Gi"}}}]}
    }
    await asyncio.to_thread(v1.patch_namespaced_pod_resize, name, "data-prep", patch)
    capped = working_set(kubesim, "data-prep", name)
    assert capped < 32 * GIB
    after, _ = host(kubesim, "gpu-node-01", tmp_path / "after")
    freed = after["MemFree"] - before["MemFree"]
    assert 0.95 * (ws - capped) <= freed <= ws - capped
    assert after["MemAvailable"] - before["MemAvailable"] >= 0.95 * (ws - capped)
    assert sum(after[p] for p in PARTS) + socket_bytes(tmp_path / "after") == after["MemTotal"]


async def test_a_limit_cut_below_usage_is_skipped_by_the_kubelet_and_frees_nothing(
    kubesim: KubeSim, tmp_path: Path
) -> None:
    """1.34+ with resizePolicy NotRequired: the kubelet keeps the old limit (KEP-1287)."""
    v1 = core_v1(kubesim)
    name = kubesim.list("pods", "data-prep")[0]["metadata"]["name"]
    ws = working_set(kubesim, "data-prep", name)
    patch = {
        "spec": {"containers": [{"name": "pandas", "resources": {"limits": {"memory": "32Gi"}}}]}
    }
    await asyncio.to_thread(v1.patch_namespaced_pod_resize, name, "data-prep", patch)
    assert working_set(kubesim, "data-prep", name) == ws
    pod = kubesim.get("pods", "data-prep", name)
    assert pod is not None
    [cond] = [c for c in pod["status"]["conditions"] if c["type"] == "PodResizeInProgress"]
    assert (cond["status"], cond["reason"]) == ("True", "Error")


@pytest.mark.parametrize("name", [*list_scenarios(), "synthetic fleet"])
def test_starting_figures_are_the_seeded_pods_of_each_node(name: str) -> None:
    if name == "synthetic fleet":
        scenario = Scenario.synthetic_fleet(nodes=12, pods=200, gpu_fraction=0.25)
    else:
        scenario = load_scenario(name)
    sim = KubeSim(scenario)
    for node in sim.scenario.nodes:
        seeded = ZERO
        for pod in sim.api.store.list("pods"):
            running = (pod.get("status") or {}).get("phase") == "Running"
            if running and pod["spec"].get("nodeName") == node.name:
                for f in figures(sim, pod).values():
                    seeded = add(seeded, f)
        assert starting_figures(sim.scenario, node.name) == seeded
