"""``bench/nvml.py`` judges the collector's GPU evidence against the driver's own figures: a
bundle that misses a holder, gets its memory wrong or its device's reserve, fails; without a
GPU the bench says it skipped and why, and succeeds. ``bench/nvml_pods.py`` judges the pod
attribution of a bundle against the pods it planted: a wrong limit or a missed OOM kill fails."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from bench.nvml import MIB, check, identities
from bench.nvml_pods import Pod
from bench.nvml_pods import check as pods_check

ROOT = Path(__file__).resolve().parents[2]
UUID = "GPU-6379d5aa"


def driver() -> dict[str, Any]:
    """What an H200 reported with two holders (bench/nvml.py's run of 2026-12-04)."""
    v2 = {"total": 143771 * MIB, "free": 131682 * MIB, "used": 11473 * MIB, "reserved": 616 * MIB}
    v1 = {"total": v2["total"], "free": v2["free"], "used": v2["used"] + v2["reserved"]}
    return {"driver": "580.159.04", "devices": [{"index": 0, "uuid": UUID, "v1": v1, "v2": v2}]}


def bundle(**gpu: Any) -> dict[str, Any]:
    device = {
        "index": 0,
        "uuid": UUID,
        "name": "NVIDIA H200",
        "memory_total_bytes": 143771 * MIB,
        "memory_used_bytes": 11473 * MIB,
        "memory_reserved_bytes": 616 * MIB,
        **gpu,
    }
    return {
        "gpus": [device],
        "gpu_processes": [
            {"gpu_index": 0, "pid": 564, "used_gpu_memory_bytes": 8802 * MIB, "command": "python3"}
        ],
        "processes": [{"pid": 564, "cmdline": "python3 -c import sys, time, torch"}],
    }


SMI_GPUS = [["0", UUID, "NVIDIA H200", "143771"]]
SMI_APPS = [["564", "8802", UUID]]


def failed(doc: dict[str, Any], holders: dict[int, int]) -> list[str]:
    return [
        c["check"] for c in check(doc, driver(), SMI_GPUS, SMI_APPS, holders, 1024) if not c["ok"]
    ]


def test_a_bundle_that_agrees_with_the_driver_passes_every_check() -> None:
    assert failed(bundle(), {564: 8192}) == []


def test_a_holder_the_bundle_does_not_list_fails() -> None:
    assert failed(bundle(), {564: 8192, 565: 2048}) == [
        "holder 565 (2048 MiB) is a GPU process of the bundle"
    ]


def test_a_holder_below_what_it_allocated_fails() -> None:
    assert any("holds its 9000 MiB" in name for name in failed(bundle(), {564: 9000}))


def test_a_device_whose_used_counts_the_reserve_fails() -> None:
    names = failed(bundle(memory_used_bytes=(11473 + 616) * MIB), {564: 8192})
    assert names == ["gpu0 used is NVML's v2 used"]


def test_the_identities_are_reported_as_differences_in_bytes() -> None:
    [row] = identities(driver())
    assert row["v2_total_minus_free_used_reserved"] == 0
    assert row["v1_used_minus_v2_used_plus_reserved"] == 0
    assert row["v2_total_minus_free_used"] == 616 * MIB


def test_without_a_gpu_the_bench_says_it_skipped_and_why(tmp_path: Path) -> None:
    if Path("/dev/nvidiactl").exists():
        pytest.skip("this machine has a GPU: the bench runs its checks instead of skipping")
    out = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "nvml.py")],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    last = json.loads(out.splitlines()[-1])
    assert last["bench"] == "nvml" and "no NVIDIA GPU" in last["skipped"]


def planted(uid: str, container_id: str, limit: int) -> Pod:
    pod = Pod.__new__(Pod)  # the figures alone: no cgroup is made
    pod.uid, pod.container_id, pod.limit = uid, container_id, limit
    return pod


HOLDER = planted("0c99aa88-3f48-456d-a561-da978a649684", "2c" * 32, 4 << 30)
VICTIM = planted("070a336d-7da6-4a67-8cba-0d905d45f071", "5a" * 32, 256 << 20)


def pods_bundle(**victim: Any) -> dict[str, Any]:
    kill = {"pid": 20, "scope": "cgroup", "pod_uid": VICTIM.uid, "container_id": "5a" * 32}
    return {
        "containers": [
            {"container_id": "2c" * 32, "pod_uid": HOLDER.uid, "limit_bytes": 4 << 30},
            {
                "container_id": "5a" * 32,
                "pod_uid": VICTIM.uid,
                "limit_bytes": 256 << 20,
                "oom_kill_events": 1,
                **victim,
            },
        ],
        "kernel_log": {"oom_kills": [kill]},
        "processes": [{"pid": 10, "pod_uid": HOLDER.uid, "container_id": "2c" * 32}],
        "gpu_processes": [{"pid": 10, "pod_uid": HOLDER.uid, "container_id": "2c" * 32}],
        "gaps": [],
    }


def pods_failed(doc: dict[str, Any]) -> list[str]:
    checks = pods_check(doc, HOLDER, VICTIM, {"holder": 10, "victim": 20}, True)
    return [c["check"] for c in checks if not c["ok"]]


def test_a_bundle_that_attributes_the_planted_pods_passes_every_pod_check() -> None:
    assert pods_failed(pods_bundle()) == []


def test_a_container_with_another_limit_or_no_oom_kill_fails_its_pod_checks() -> None:
    assert pods_failed(pods_bundle(limit_bytes=1 << 30, oom_kill_events=0)) == [
        "the victim's container has its limit",
        "the victim's container counts one OOM kill",
    ]
