"""Captured host trees (v2+systemd+containerd, v2+cgroupfs+CRI-O, v1+cgroupfs+docker) are
attributed exactly as their hand-written expected.txt says."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from bot.collectors.bundle import collect
from bot.core.model.evidence import EvidenceBundle
from gpunode_sandbox.fake_nvml import FakeNvml

HOSTS = Path(__file__).resolve().parents[1] / "fixtures" / "hosts"
NAMES = ["v2-systemd-containerd", "v2-cgroupfs-crio", "v1-cgroupfs-docker"]


def _n(value: object) -> str:
    return "-" if value is None else str(value)


def describe(bundle: EvidenceBundle) -> list[str]:
    """The bundle in expected.txt's line format (order-insensitive except processes)."""
    assert bundle.free is not None
    f = bundle.free
    lines = [
        f"cgroup_version {bundle.cgroup_version}",
        f"free used={f.used_bytes} legacy={f.used_legacy_bytes} buff_cache={f.buff_cache_bytes}"
        f" available={f.available_bytes}",
        f"socket_memory {bundle.socket_memory_bytes}",
        f"process_count {bundle.process_count}",
    ]
    for p in bundle.pods:
        lines.append(
            f"pod {p.pod_uid} qos={_n(p.qos)} usage={_n(p.usage_bytes)} limit={_n(p.limit_bytes)}"
            f" working_set={_n(p.working_set_bytes)}"
        )
    for c in bundle.containers:
        lines.append(
            f"container {c.container_id or c.cgroup_path} pod={_n(c.pod_uid)} runtime={c.runtime}"
            f" qos={_n(c.qos)} usage={_n(c.usage_bytes)} limit={_n(c.limit_bytes)}"
            f" working_set={_n(c.working_set_bytes)} oom_kill={_n(c.oom_kill_events)}"
        )
    for pr in bundle.processes:
        lines.append(
            f"process {pr.pid} command={pr.command} rss={pr.rss_bytes} pod={_n(pr.pod_uid)}"
            f" container={_n(pr.container_id)}"
        )
    for g in bundle.gpu_processes:
        lines.append(f"gpu_process {g.pid} pod={_n(g.pod_uid)} container={_n(g.container_id)}")
    lines += [f"gap {g.source}" for g in bundle.gaps]
    return lines


def _collect(name: str) -> EvidenceBundle:
    spec = HOSTS / name / "nvml.json"
    nvml = FakeNvml.from_file(spec) if spec.exists() else FakeNvml.from_spec({"devices": []})
    return collect(HOSTS / name, top=20, nvml=nvml, now=lambda: datetime(2026, 1, 1, tzinfo=UTC))


@pytest.mark.parametrize("name", NAMES)
def test_fixture_host_is_attributed_as_expected(name: str) -> None:
    expected = [
        line
        for line in (HOSTS / name / "expected.txt").read_text().splitlines()
        if line and not line.startswith("#")
    ]
    got = describe(_collect(name))
    procs = [line for line in got if line.startswith("process ")]
    assert procs == [line for line in expected if line.startswith("process ")], "RSS order"
    assert sorted(got) == sorted(expected)


def test_fixture_hostname_comes_from_the_host_tree() -> None:
    assert _collect("v2-cgroupfs-crio").hostname == "gpu-node-01"


def test_gpu_memory_is_reported_as_nvml_returns_it() -> None:
    gpu = _collect("v2-systemd-containerd").gpus[0]
    assert (gpu.memory_used_bytes, gpu.memory_reserved_bytes) == (80000000000, 536870912)
