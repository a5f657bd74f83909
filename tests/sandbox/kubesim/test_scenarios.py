"""Shipped scenarios load, generate consistent host trees, and tell the seed story."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from gpunode_sandbox.kubesim import KubeSim, Scenario, list_scenarios, load_scenario
from gpunode_sandbox.kubesim.hosttree import write_host_tree

KIB = 1024


def meminfo(root: Path) -> dict[str, int]:
    out = {}
    for line in (root / "proc/meminfo").read_text().splitlines():
        key, rest = line.split(":", 1)
        out[key] = int(rest.split()[0]) * (KIB if rest.strip().endswith("kB") else 1)
    return out


def socket_bytes(root: Path) -> int:
    """TCP + UDP ``mem`` pages of ``proc/net/sockstat``, in bytes (in no meminfo line)."""
    pages = 0
    for line in (root / "proc/net/sockstat").read_text().splitlines():
        fields = line.split()
        if fields[0] in ("TCP:", "UDP:"):
            pages += int(fields[fields.index("mem") + 1])
    return pages * 4096


def test_every_shipped_scenario_is_listed() -> None:
    assert {"seed", "slab-leak", "gpu-bound", "limit-edge", "healthy"} <= set(list_scenarios())


@pytest.mark.parametrize("name", list_scenarios())
def test_every_node_host_tree_adds_up_to_mem_total(name: str, tmp_path: Path) -> None:
    sim = KubeSim(load_scenario(name))
    for node in sim.scenario.nodes:
        write_host_tree(sim, node.name, tmp_path / node.name)
        m = meminfo(tmp_path / node.name)
        parts = (
            "MemFree",
            "AnonPages",
            "Cached",
            "Buffers",
            "Slab",
            "KernelStack",
            "PageTables",
            "Percpu",
            "VmallocUsed",
            "Hugetlb",
        )
        assert sum(m[p] for p in parts) + socket_bytes(tmp_path / node.name) == m["MemTotal"]
        assert m["Slab"] == m["SReclaimable"] + m["SUnreclaim"]
        assert m["Active(file)"] + m["Inactive(file)"] == m["Cached"] - m["Shmem"] + m["Buffers"]
        assert m["Cached"] >= m["Shmem"]
        file_lru = m["Active(file)"] + m["Inactive(file)"]
        assert m["MemAvailable"] <= m["MemFree"] + file_lru + m["SReclaimable"]
        assert m["Hugetlb"] >= m["HugePages_Total"] * m["Hugepagesize"]


def test_seed_node_tells_the_story_in_kernel_numbers(tmp_path: Path) -> None:
    sim = KubeSim(load_scenario("seed"))
    spec = write_host_tree(sim, "gpu-node-01", tmp_path)
    m = meminfo(tmp_path)
    gib = 2**30
    assert m["MemTotal"] == 251 * gib
    assert m["Buffers"] + m["Cached"] + m["SReclaimable"] == 14 * gib  # buff/cache
    assert m["MemAvailable"] == 3.5 * gib
    kernel = m["Slab"] + m["KernelStack"] + m["PageTables"] + m["Percpu"] + m["VmallocUsed"]
    assert kernel == 44 * gib
    assert spec is not None
    nvml = json.loads(spec.read_text())
    assert [d["memory_used_bytes"] for d in nvml["devices"]] == [64 * gib] * 8
    pid = nvml["devices"][0]["processes"][0]["pid"]
    status = (tmp_path / f"proc/{pid}/status").read_text()
    assert "VmRSS:\t72224768 kB" in status  # 62Gi anon + 900Mi file + 6Gi shmem
    assert (tmp_path / f"proc/{pid}/cmdline").read_bytes().split(b"\0")[:2] == [
        b"/usr/bin/python",
        b"-u",
    ]
    train = sim.get("pods", "ml-train", "train-llm-0")
    assert train is not None
    cid = train["status"]["containerStatuses"][0]["containerID"].removeprefix("containerd://")
    uid = train["metadata"]["uid"].replace("-", "_")
    cgroup = (tmp_path / f"proc/{pid}/cgroup").read_text()
    assert cgroup == (
        f"0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod{uid}"
        f".slice/cri-containerd-{cid}.scope\n"
    )
    assert (
        tmp_path / "sys/fs/cgroup" / cgroup[4:].strip() / "memory.max"
    ).read_text() == f"{72 * gib}\n"


def test_cgroup_v1_cri_o_tree_uses_crio_leaves_and_total_stats(tmp_path: Path) -> None:
    sim = KubeSim(load_scenario("limit-edge"))
    write_host_tree(sim, "cpu-node-01", tmp_path)
    pod = sim.list("pods", "data-prep")[0]
    cid = pod["status"]["containerStatuses"][0]["containerID"]
    assert cid.startswith("cri-o://")
    leaf = (
        tmp_path
        / "sys/fs/cgroup/memory/kubepods/burstable"
        / f"pod{pod['metadata']['uid']}"
        / f"crio-{cid.removeprefix('cri-o://')}"
    )
    stat = dict(line.split() for line in (leaf / "memory.stat").read_text().splitlines())
    usage = int((leaf / "memory.usage_in_bytes").read_text())
    limit = int((leaf / "memory.limit_in_bytes").read_text())
    working = usage - int(stat["total_inactive_file"])
    assert int(working / limit * 100) == 99


def test_seed_allocated_resources_match_the_story() -> None:
    from gpunode_sandbox.kubesim.quantities import to_bytes

    sim = KubeSim(load_scenario("seed"))
    pods = [p for p in sim.list("pods") if p["spec"].get("nodeName") == "gpu-node-01"]
    req = sum(
        to_bytes(c["resources"].get("requests", {}).get("memory", 0))
        for p in pods
        for c in p["spec"]["containers"]
    )
    lim = sum(
        to_bytes(c["resources"].get("limits", {}).get("memory", 0))
        for p in pods
        for c in p["spec"]["containers"]
    )
    node = sim.get("nodes", None, "gpu-node-01")
    assert node is not None
    alloc = to_bytes(node["status"]["allocatable"]["memory"])
    assert (req, int(req / alloc * 100)) == (128 * 2**30, 85)
    assert (lim, int(lim / alloc * 100)) == (150 * 2**30, 99)


@pytest.mark.slow
def test_synthetic_fleet_loads_sixty_thousand_pods() -> None:
    sim = KubeSim(Scenario.synthetic_fleet(nodes=2000, pods=60_000, gpu_fraction=0.25))
    assert len(sim.api.store.list("pods")) == 60_000
    assert sum(1 for n in sim.scenario.nodes if n.gpus) == 500


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not installed")
def test_kubectl_describe_node_shows_the_seed_allocation() -> None:
    proc = subprocess.Popen(
        [sys.executable, "-m", "bot", "sandbox", "kube", "--scenario", "seed"],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        url = proc.stdout.readline().rsplit(" at ", 1)[1].strip()
        got = subprocess.run(
            ["kubectl", "get", "nodes,pods", "-A", "--server", url],
            capture_output=True,
            text=True,
            timeout=60,
            check=True,
        ).stdout
        assert "node/gpu-node-01" in got and "pod/train-llm-0" in got
        described = subprocess.run(
            ["kubectl", "describe", "node", "gpu-node-01", "--server", url],
            capture_output=True,
            text=True,
            timeout=60,
            check=True,
        ).stdout
    finally:
        proc.terminate()
        proc.wait(10)
        if proc.stdout is not None:
            proc.stdout.close()
    block = described.split("Allocated resources:")[1]
    assert "memory             128Gi (85%)   150Gi (99%)" in block
    assert "nvidia.com/gpu     8             8" in block
