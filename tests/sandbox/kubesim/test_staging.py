"""The stand-in stages every consumer class as a real node shows it: processes outside pods
(their systemd unit in /proc/PID/cgroup, v2 and v1 forms; their GPU memory in NVML's process
list), hugepage pools in meminfo and node capacity, shmem per pod and on the host, slabinfo,
and scenario validation that rejects what a kernel or kubelet could not produce."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from bot.collectors.procfs import parse_meminfo, parse_proc_cgroup
from gpunode_sandbox.kubesim import KubeSim, Scenario, load_scenario
from gpunode_sandbox.kubesim.hosttree import write_host_tree
from gpunode_sandbox.kubesim.nodes import node_object
from gpunode_sandbox.kubesim.slabfiles import slabinfo_text

GIB = 2**30
KIB = 1024

NODE: dict[str, Any] = {
    "name": "n1",
    "capacity": {"cpu": "8", "memory": "64Gi", "nvidia.com/gpu": "2"},
    "allocatable": {"cpu": "8", "memory": "60Gi", "nvidia.com/gpu": "2"},
    "gpus": {"count": 2},
    "kernel": {"system_anon": "12Gi"},
}


def scenario(node: dict[str, Any] | None = None, **top: Any) -> Scenario:
    return Scenario.model_validate({"name": "t", "nodes": [{**NODE, **(node or {})}], **top})


def meminfo(root: Path) -> dict[str, int]:
    out = {}
    for line in (root / "proc/meminfo").read_text().splitlines():
        key, rest = line.split(":", 1)
        out[key] = int(rest.split()[0]) * (KIB if rest.strip().endswith("kB") else 1)
    return out


def stat(path: Path) -> dict[str, int]:
    return {k: int(v) for k, v in (line.split() for line in path.read_text().splitlines())}


DAEMON = {
    "command": "nv-hostengine",
    "cmdline": "/usr/bin/nv-hostengine -n",
    "unit": "nvidia-dcgm.service",
    "rss_anon": "10Gi",
    "gpu_memory": {1: "3Gi"},
}


def test_a_system_process_gpu_memory_is_in_nvmls_process_list_with_no_pod(
    tmp_path: Path,
) -> None:
    sim = KubeSim(scenario({"system_processes": [DAEMON]}))

    spec = write_host_tree(sim, "n1", tmp_path)

    assert spec is not None
    devices = json.loads(spec.read_text())["devices"]
    assert devices[1]["processes"] == [{"pid": 1100, "used_gpu_memory_bytes": 3 * GIB}]
    assert devices[1]["memory_used_bytes"] == 3 * GIB
    assert devices[0]["processes"] == []
    cgroup = (tmp_path / "proc/1100/cgroup").read_text()
    assert cgroup == "0::/system.slice/nvidia-dcgm.service\n"
    unit = tmp_path / "sys/fs/cgroup/system.slice/nvidia-dcgm.service"
    assert stat(unit / "memory.stat")["anon"] == 10 * GIB


def test_on_cgroup_v1_a_unit_process_shows_the_hybrid_multi_line_form(tmp_path: Path) -> None:
    sim = KubeSim(scenario({"cgroup_version": 1, "system_processes": [DAEMON]}))

    write_host_tree(sim, "n1", tmp_path)

    text = (tmp_path / "proc/1100/cgroup").read_text()
    lines = {ctrl: path for _, ctrl, path in (line.split(":", 2) for line in text.splitlines())}
    unit = "/system.slice/nvidia-dcgm.service"
    assert lines["memory"] == lines["pids"] == lines["cpu,cpuacct"] == unit
    assert lines["cpuset"] == lines["hugetlb"] == lines["perf_event"] == "/"
    assert lines["name=systemd"] == unit and text.endswith(f"0::{unit}\n")
    assert [int(line.split(":")[0]) for line in text.splitlines()] == list(range(13, -1, -1))
    assert parse_proc_cgroup(text) == unit  # what the real collector reads
    assert (tmp_path / "sys/fs/cgroup/memory/system.slice/nvidia-dcgm.service").is_dir()


@pytest.mark.parametrize(
    ("process", "path"),
    [
        (
            {"command": "nvidia-persiste", "cmdline": "/usr/bin/nvidia-persistenced --v"},
            "/system.slice/nvidia-persistenced.service",
        ),
        (
            {"command": "python3", "cgroup": "user.slice/user-1001.slice/session-12.scope"},
            "/user.slice/user-1001.slice/session-12.scope",
        ),
        ({"command": "backup-agent", "cgroup": "/"}, "/"),
    ],
)
def test_a_system_process_lives_in_its_unit_its_named_cgroup_or_the_root(
    tmp_path: Path, process: dict[str, Any], path: str
) -> None:
    sim = KubeSim(scenario({"system_processes": [process]}))

    write_host_tree(sim, "n1", tmp_path)

    assert (tmp_path / "proc/1100/cgroup").read_text() == f"0::{path}\n"


def test_a_process_left_in_a_gone_pods_scope_is_counted_in_kubepods(tmp_path: Path) -> None:
    uid = "3f2a9c4e_7b1d_4e8a_9c2f_5d6e7f8a9b0c"
    pod = f"kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod{uid}.slice"
    scope = f"{pod}/cri-containerd-{'ab' * 32}.scope"
    orphan = {"command": "python", "cgroup": scope, "rss_anon": "4Gi", "gpu_memory": {0: "70Gi"}}
    sim = KubeSim(scenario({"system_processes": [orphan]}))

    write_host_tree(sim, "n1", tmp_path)

    root = tmp_path / "sys/fs/cgroup"
    assert stat(root / scope / "memory.stat")["anon"] == 4 * GIB
    assert stat(root / pod / "memory.stat")["anon"] == 4 * GIB
    assert stat(root / "kubepods.slice/kubepods-besteffort.slice/memory.stat")["anon"] == 4 * GIB
    assert int((root / "kubepods.slice/memory.current").read_text()) >= 4 * GIB
    assert (tmp_path / "proc/1100/cgroup").read_text() == f"0::/{scope}\n"


def test_hugepage_pools_show_in_meminfo_and_leave_memfree(tmp_path: Path) -> None:
    pools = [
        {"size": "1Gi", "total": 16, "free": 4, "reserved": 2, "surplus": 1},
        {"size": "2Mi", "total": 1024},
    ]
    sim = KubeSim(scenario({"hugepages": pools, "allocatable": {"memory": "40Gi"}}))
    without = KubeSim(scenario({"allocatable": {"memory": "40Gi"}}))

    write_host_tree(sim, "n1", tmp_path / "a")
    write_host_tree(without, "n1", tmp_path / "b")

    m, plain = meminfo(tmp_path / "a"), meminfo(tmp_path / "b")
    assert (m["HugePages_Total"], m["HugePages_Free"], m["HugePages_Rsvd"]) == (16, 4, 2)
    assert (m["HugePages_Surp"], m["Hugepagesize"]) == (1, GIB)
    assert m["Hugetlb"] == 16 * GIB + 1024 * 2 * 2**20
    assert plain["MemFree"] - m["MemFree"] == m["Hugetlb"]
    assert m["MemTotal"] == plain["MemTotal"]
    parsed, problems = parse_meminfo((tmp_path / "a/proc/meminfo").read_text())
    assert problems == [] and parsed is not None
    assert parsed["hugepages_total"] * parsed["hugepage_size_bytes"] == 16 * GIB
    status = node_object(sim.scenario.nodes[0])["status"]
    assert status["capacity"]["hugepages-1Gi"] == str(16 * GIB)
    assert status["allocatable"]["hugepages-2Mi"] == str(2 * GIB)


def test_shmem_of_pods_and_host_is_in_memory_stat_shmem_and_cached(tmp_path: Path) -> None:
    workload = {
        "kind": "StatefulSet",
        "name": "vision",
        "nodes": ["n1"],
        "shm_size": "32Gi",
        "containers": [{"name": "t", "usage": {"anon": "4Gi", "file": "22Gi", "shmem": "20Gi"}}],
    }
    for version in (1, 2):
        node = {"cgroup_version": version, "kernel": {"system_anon": "2Gi", "shmem": "6Gi"}}
        sim = KubeSim(scenario(node, workloads=[workload]))
        root = tmp_path / f"v{version}"

        write_host_tree(sim, "n1", root)

        m = meminfo(root)
        assert m["Shmem"] == 26 * GIB
        assert m["Cached"] == (22 + 4 + 6) * GIB  # pods' file (shmem in it) + cache + host
        stats = [stat(p) for p in root.rglob("memory.stat") if "cri-containerd-" in str(p)]
        key = "shmem" if version == 2 else "total_shmem"
        assert [s[key] for s in stats] == [20 * GIB]
        assert all(s["inactive_file"] <= 2 * GIB for s in stats)  # shmem is not inactive file
    pod = sim.get("pods", "default", "vision-0")
    assert pod is not None
    volumes = pod["spec"]["volumes"]
    assert {"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": "32Gi"}} in volumes
    mounts = pod["spec"]["containers"][0]["volumeMounts"]
    assert {"name": "dshm", "mountPath": "/dev/shm"} in mounts


def test_slabinfo_names_the_leaking_cache_and_adds_up_to_slab(tmp_path: Path) -> None:
    kernel = {
        "system_anon": "2Gi",
        "slab_reclaimable": "3Gi",
        "slab_unreclaimable": "30Gi",
        "slab_caches": {"kmalloc-4k": "25Gi"},
    }
    sim = KubeSim(scenario({"kernel": kernel}))

    write_host_tree(sim, "n1", tmp_path)

    lines = (tmp_path / "proc/slabinfo").read_text().splitlines()
    assert lines[0] == "slabinfo - version: 2.1"
    rows = {
        f[0]: int(f[14]) * int(f[5]) * 4096  # num_slabs x pagesperslab pages
        for f in (line.split() for line in lines[2:])
    }
    assert lines[2].split()[0] == "kmalloc-4k"
    assert 25 * GIB <= rows["kmalloc-4k"] <= 26 * GIB
    assert abs(sum(rows.values()) - 33 * GIB) < len(rows) * 8 * 4096
    quiet = KubeSim(scenario({"kernel": {**kernel, "slabinfo": False}}))
    write_host_tree(quiet, "n1", tmp_path / "quiet")
    assert not (tmp_path / "quiet/proc/slabinfo").exists()


def test_named_slab_caches_cannot_exceed_the_slab() -> None:
    kernel = (
        load_scenario("seed")
        .nodes[0]
        .kernel.model_copy(update={"slab_caches": {"kmalloc-4k": "100Gi"}})
    )
    with pytest.raises(ValueError, match="slab_caches"):
        slabinfo_text(kernel)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"nodes": [{**NODE, "colour": "red"}]}, "colour"),
        ({"expected": {"node": "n1", "cause": "healthy", "why": "x", "verdict": "y"}}, "verdict"),
        (
            {"expected": {"node": "n1", "cause": "healthy", "why": "x", "tiers": {1: {"fix": 1}}}},
            "fix",
        ),
        ({"expected": {"node": "n1", "cause": "meteor", "why": "x"}}, "cause"),
        ({"expected": {"node": "n9", "cause": "healthy", "why": "x"}}, "n9"),
        (
            {
                "expected": {
                    "node": "n1",
                    "cause": "healthy",
                    "why": "x",
                    "shortage": {"min": "2Gi", "max": "1Gi"},
                }
            },
            "above max",
        ),
        (
            {
                "nodes": [
                    {
                        **NODE,
                        "hugepages": [{"size": "1Gi", "total": 8}],
                        "capacity": {**NODE["capacity"], "hugepages-1Gi": "4Gi"},
                    }
                ]
            },
            "total x size",
        ),
        ({"nodes": [{**NODE, "hugepages": [{"size": "1Gi", "total": 8}]}]}, "leave out"),
        (
            {
                "nodes": [
                    {**NODE, "hugepages": [{"size": "2Mi", "total": 8, "free": 2, "reserved": 3}]}
                ]
            },
            "reserved <= free",
        ),
        (
            {"nodes": [{**NODE, "system_processes": [{**DAEMON, "rss_anon": "20Gi"}]}]},
            "system_anon",
        ),
        (
            {"nodes": [{**NODE, "system_processes": [{**DAEMON, "rss_shmem": "1Gi"}]}]},
            "kernel.shmem",
        ),
        ({"nodes": [{**NODE, "system_processes": [{**DAEMON, "gpu_memory": {5: "1Gi"}}]}]}, "GPUs"),
        ({"nodes": [{**NODE, "system_processes": [{**DAEMON, "cgroup": "x.slice"}]}]}, "not both"),
        ({"nodes": [{**NODE, "system_processes": [{**DAEMON, "unit": "dcgm"}]}]}, "service"),
        (
            {
                "nodes": [NODE],
                "workloads": [
                    {
                        "kind": "Pod",
                        "name": "p",
                        "containers": [{"name": "c", "usage": {"file": "1Gi", "shmem": "2Gi"}}],
                    }
                ],
            },
            "part of file",
        ),
    ],
)
def test_the_scenario_schema_rejects_what_no_node_could_show(
    change: dict[str, Any], message: str
) -> None:
    data = {"name": "t", "nodes": [NODE], **change}
    with pytest.raises(ValueError, match=message):
        Scenario.model_validate(data)
