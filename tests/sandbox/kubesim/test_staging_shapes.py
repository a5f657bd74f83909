"""The stand-in stages what real GPU nodes show: pods owned directly by
a custom resource keep their usage, native sidecars hold memory in their own cgroup, CUDA's
pinned host memory is Mlocked/Unevictable, dirty and writeback pages are counted, containers
have logs (and their previous instance's), memory-backed emptyDirs mount at any path; and a
scenario that names what the stand-in cannot stage is refused, never silently zero."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from gpunode_sandbox.kubesim import KubeSim, Scenario
from gpunode_sandbox.kubesim.hosttree import write_host_tree
from gpunode_sandbox.kubesim.statuses import ApiError

GIB = 2**30
KIB = 1024
NODE: dict[str, Any] = {
    "name": "n1",
    "capacity": {"cpu": "8", "memory": "64Gi", "nvidia.com/gpu": "2"},
    "allocatable": {"cpu": "8", "memory": "60Gi", "nvidia.com/gpu": "2"},
    "gpus": {"count": 2},
    "kernel": {"system_anon": "4Gi", "page_cache": "4Gi"},
}
CRDS = ["pytorchjobs.kubeflow.org", "rayclusters.ray.io", "jobs.batch.volcano.sh"]


def scenario(workloads: list[dict[str, Any]], **node: Any) -> Scenario:
    return Scenario.model_validate(
        {"name": "t", "crds": CRDS, "nodes": [{**NODE, **node}], "workloads": workloads}
    )


def meminfo(root: Path) -> dict[str, int]:
    out = {}
    for line in (root / "proc/meminfo").read_text().splitlines():
        key, rest = line.split(":", 1)
        out[key] = int(rest.split()[0]) * (KIB if rest.strip().endswith("kB") else 1)
    return out


def container_stats(root: Path) -> list[dict[str, int]]:
    return [
        {k: int(v) for k, v in (line.split() for line in p.read_text().splitlines())}
        for p in sorted(root.rglob("memory.stat"))
        if "cri-containerd-" in str(p)
    ]


def _pytorchjob_pod(**container: Any) -> dict[str, Any]:
    return {
        "kind": "Pod",
        "name": "llm-pretrain-worker-0",
        "namespace": "ml",
        "nodes": ["n1"],
        "labels": {"training.kubeflow.org/job-name": "llm-pretrain"},
        "owner": {"api_version": "kubeflow.org/v1", "kind": "PyTorchJob", "name": "llm-pretrain"},
        "containers": [
            {
                "name": "pytorch",
                "requests": {"nvidia.com/gpu": "1"},
                "limits": {"nvidia.com/gpu": "1"},
                **container,
            }
        ],
    }


@pytest.mark.parametrize(
    ("api_version", "kind"),
    [
        ("kubeflow.org/v1", "PyTorchJob"),
        ("ray.io/v1", "RayCluster"),
        ("batch.volcano.sh/v1alpha1", "Job"),
    ],
)
def test_a_pod_owned_directly_by_a_custom_resource_holds_its_scenario_usage(
    tmp_path: Path, api_version: str, kind: str
) -> None:
    pod = _pytorchjob_pod(usage={"anon": "9Gi", "file": "1Gi"})
    pod["owner"] = {"api_version": api_version, "kind": kind, "name": "gang-a"}
    sim = KubeSim(scenario([pod]))

    write_host_tree(sim, "n1", tmp_path)

    obj = sim.get("pods", "ml", "llm-pretrain-worker-0")
    assert obj is not None and obj["metadata"]["ownerReferences"][0]["kind"] == kind
    (s,) = container_stats(tmp_path)
    assert s["anon"] == 9 * GIB  # not the 20Mi default of an unknown pod


def test_a_native_sidecar_holds_memory_in_its_own_cgroup_with_its_status(tmp_path: Path) -> None:
    workload = {
        "kind": "StatefulSet",
        "name": "train",
        "namespace": "ml",
        "nodes": ["n1"],
        "containers": [{"name": "trainer", "usage": {"anon": "6Gi", "file": "1Gi"}}],
        "init_containers": [
            {
                "name": "log-shipper",
                "restart_policy": "Always",
                "usage": {"anon": "11Gi", "file": "100Mi"},
                "processes": [{"command": "fluent-bit", "rss_anon": "11Gi"}],
            }
        ],
    }
    sim = KubeSim(scenario([workload]))

    write_host_tree(sim, "n1", tmp_path)

    pod = sim.get("pods", "ml", "train-0")
    assert pod is not None
    (init,) = pod["spec"]["initContainers"]
    assert init["restartPolicy"] == "Always"
    (status,) = pod["status"]["initContainerStatuses"]
    assert status["name"] == "log-shipper" and "running" in status["state"]
    cid = status["containerID"].split("://")[1]
    stats = {p.parent.name: p for p in tmp_path.rglob("memory.stat") if "cri-containerd-" in str(p)}
    sidecar = next(p for name, p in stats.items() if cid in name)
    assert f"anon {11 * GIB}\n" in sidecar.read_text()
    assert len(stats) == 2


def test_pinned_host_memory_is_mlocked_and_unevictable_and_dirty_pages_are_counted(
    tmp_path: Path,
) -> None:
    pod = _pytorchjob_pod(
        usage={
            "anon": "20Gi",
            "mlocked": "8Gi",
            "file": "6Gi",
            "dirty": "2Gi",
            "writeback": "512Mi",
        }
    )
    sim = KubeSim(scenario([pod], kernel={**NODE["kernel"], "dirty": "1Gi", "writeback": "256Mi"}))

    write_host_tree(sim, "n1", tmp_path)

    m = meminfo(tmp_path)
    assert m["Mlocked"] == m["Unevictable"] == 8 * GIB
    assert m["Dirty"] == 3 * GIB and m["Writeback"] == 768 * 2**20
    lru = m["Active(anon)"] + m["Inactive(anon)"] + m["Unevictable"]
    assert abs(lru - (m["AnonPages"] + m["Shmem"])) <= 4 * KIB  # kB lines round down
    (s,) = container_stats(tmp_path)
    assert (s["unevictable"], s["file_dirty"], s["file_writeback"]) == (
        8 * GIB,
        2 * GIB,
        512 * 2**20,
    )


async def test_a_container_log_and_its_previous_instances_cuda_oom_line_are_served() -> None:
    oom = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.\n"
    pod = _pytorchjob_pod(
        restart_count=4, last_terminated_reason="Error", logs="step 120\n", previous_logs=oom
    )
    sim = KubeSim(scenario([pod]))

    assert sim.pod_log("ml", "llm-pretrain-worker-0", {}) == "step 120\n"
    assert sim.pod_log("ml", "llm-pretrain-worker-0", {"previous": "true"}) == oom


def test_previous_logs_of_a_container_that_never_restarted_are_not_found() -> None:
    sim = KubeSim(scenario([_pytorchjob_pod(logs="ok\n")]))

    with pytest.raises(ApiError, match="previous terminated container"):
        sim.pod_log("ml", "llm-pretrain-worker-0", {"previous": "true"})


def test_a_memory_backed_emptydir_mounts_at_any_path() -> None:
    workload = {
        "kind": "Deployment",
        "name": "cache",
        "nodes": ["n1"],
        "memory_volumes": [{"name": "hot", "path": "/var/cache/features", "size_limit": "8Gi"}],
        "containers": [{"name": "c", "usage": {"anon": "1Gi", "file": "6Gi", "shmem": "5Gi"}}],
    }
    sim = KubeSim(scenario([workload]))

    (pod,) = [p for p in sim.api.store.list("pods") if p["metadata"]["name"].startswith("cache")]

    assert {"name": "hot", "emptyDir": {"medium": "Memory", "sizeLimit": "8Gi"}} in pod["spec"][
        "volumes"
    ]
    assert {"name": "hot", "mountPath": "/var/cache/features"} in pod["spec"]["containers"][0][
        "volumeMounts"
    ]


@pytest.mark.parametrize(
    ("workload", "message"),
    [
        (
            {"kind": "Pod", "name": "p", "replicas": 3, "containers": [{"name": "c"}]},
            "a bare Pod is one pod",
        ),
        (
            {
                "kind": "Pod",
                "name": "p",
                "init_containers": [{"name": "i", "usage": {"anon": "1Gi"}}],
                "containers": [{"name": "c"}],
            },
            "has finished",
        ),
        (
            {
                "kind": "Pod",
                "name": "p",
                "owner": {"api_version": "example.com/v1", "kind": "Gang", "name": "g"},
                "containers": [{"name": "c"}],
            },
            "does not serve",
        ),
        (
            {"kind": "Pod", "name": "p", "containers": [{"name": "c", "restart_policy": "Always"}]},
            "for init containers",
        ),
        (
            {
                "kind": "Pod",
                "name": "p",
                "containers": [{"name": "c", "usage": {"anon": "1Gi", "mlocked": "2Gi"}}],
            },
            "mlocked",
        ),
    ],
)
def test_a_scenario_naming_what_the_stand_in_cannot_stage_is_an_error(
    workload: dict[str, Any], message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        scenario([workload])
