"""NVML through an injectable module: every failure is a gap, API versions fall back."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from bot.collectors.gaps import GapLog
from bot.collectors.nvml import load_pynvml, read_gpus
from gpunode_sandbox.fake_nvml import FakeNvml


def spec(**over: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "driver_version": "550.54.15",
        "memory_info_version": 2,
        "fail": None,
        "devices": [
            {
                "index": 0,
                "uuid": "GPU-a",
                "name": "NVIDIA H100",
                "memory_total_bytes": 1000,
                "memory_used_bytes": 600,
                "memory_reserved_bytes": 50,
                "utilization_gpu_percent": 90,
                "processes": [
                    {"pid": 10, "used_gpu_memory_bytes": 500},
                    {"pid": 11, "used_gpu_memory_bytes": None},
                ],
            }
        ],
    }
    return {**base, **over}


def test_v2_memory_reports_used_and_reserved_separately() -> None:
    gaps = GapLog()
    devices, procs, driver = read_gpus(FakeNvml.from_spec(spec()), gaps=gaps)
    assert driver == "550.54.15" and gaps.items == []
    assert devices[0]["memory_used_bytes"] == 600
    assert devices[0]["memory_reserved_bytes"] == 50
    assert devices[0]["memory_free_bytes"] == 350
    assert [(p["pid"], p["used_gpu_memory_bytes"]) for p in procs] == [(10, 500), (11, None)]


def test_a_v1_only_driver_falls_back_and_has_no_reserved() -> None:
    fake = FakeNvml.from_spec(spec(memory_info_version=1))
    devices, _, _ = read_gpus(fake, gaps=GapLog())
    assert devices[0]["memory_reserved_bytes"] is None
    assert "nvmlDeviceGetMemoryInfo" in fake.calls


def test_drivers_without_the_v3_process_call_use_v2() -> None:
    fake = FakeNvml.from_spec(spec(process_api=2))
    _, procs, _ = read_gpus(fake, gaps=GapLog())
    assert len(procs) == 2 and "nvmlDeviceGetComputeRunningProcesses_v2" in fake.calls


@pytest.mark.parametrize(
    ("fail", "words"),
    [
        ("library_not_found", "library not found"),
        ("driver_not_loaded", "driver not loaded"),
        ("no_permission", "permission"),
    ],
)
def test_init_failures_are_gaps_not_errors(fail: str, words: str) -> None:
    gaps = GapLog()
    assert read_gpus(FakeNvml.from_spec(spec(fail=fail)), gaps=gaps) == ([], [], None)
    assert gaps.items[0]["source"] == "nvml" and words in gaps.items[0]["reason"].lower()


def test_no_gpu_is_a_gap_and_nvml_is_shut_down() -> None:
    gaps = GapLog()
    fake = FakeNvml.from_spec(spec(devices=[]))
    assert read_gpus(fake, gaps=gaps)[0] == []
    assert "no GPU" in gaps.items[0]["reason"] and fake.initialized == 0


def test_not_available_memory_value_becomes_none() -> None:
    s = spec()
    s["devices"][0]["processes"] = [{"pid": 3, "used_gpu_memory_bytes": (1 << 64) - 1}]
    _, procs, _ = read_gpus(FakeNvml.from_spec(s), gaps=GapLog())
    assert procs[0]["used_gpu_memory_bytes"] is None


@pytest.mark.skipif(Path("/dev/nvidiactl").exists(), reason="a real NVIDIA driver is present")
def test_no_nvidia_driver_on_this_machine_is_a_gap() -> None:
    gaps = GapLog()
    assert read_gpus(None, gaps=gaps) == ([], [], None)
    assert [g["source"] for g in gaps.items] == ["nvml"]


def test_fake_refuses_calls_before_init_like_nvml() -> None:
    fake = FakeNvml.from_spec(spec())
    with pytest.raises(fake.NVMLError) as err:
        fake.nvmlDeviceGetCount()
    assert err.value.value == 1


def test_without_dev_nvidiactl_pynvml_is_not_even_imported(tmp_path: Path) -> None:
    gaps = GapLog()
    assert load_pynvml(gaps, dev=str(tmp_path)) is None
    assert "nvidiactl" in gaps.items[0]["reason"]


@pytest.mark.skipif(Path("/dev/nvidiactl").exists(), reason="a real NVIDIA driver is present")
def test_the_real_pynvml_without_its_library_is_a_gap(tmp_path: Path) -> None:
    (tmp_path / "nvidiactl").write_text("")
    gaps = GapLog()
    module = load_pynvml(gaps, dev=str(tmp_path))
    assert module is not None and module.__name__ == "pynvml"
    assert read_gpus(module, gaps=gaps) == ([], [], None)
    assert "library not found" in gaps.items[0]["reason"].lower()


@pytest.mark.parametrize(
    ("total", "used", "reserved"),
    [(1000, 600, 50), (150754820096, 12031754240, 644939776), (1000, 0, 0), (1000, 999, 1)],
)
def test_the_fake_keeps_the_memory_identities_an_h200_showed(
    total: int, used: int, reserved: int
) -> None:
    device = {**spec()["devices"][0], "memory_total_bytes": total}
    device.update(memory_used_bytes=used, memory_reserved_bytes=reserved)
    fake = FakeNvml.from_spec(spec(devices=[device]))
    fake.nvmlInit()
    v1 = fake.nvmlDeviceGetMemoryInfo(0)
    v2 = fake.nvmlDeviceGetMemoryInfo(0, version=0x02000028)
    assert v2.total == v2.free + v2.used + v2.reserved
    assert v1.total == v1.free + v1.used
    assert (v1.used, v1.free) == (v2.used + v2.reserved, v2.free)


def test_a_v1_only_drivers_used_counts_the_reserve_it_cannot_name() -> None:
    devices, _, _ = read_gpus(FakeNvml.from_spec(spec(memory_info_version=1)), gaps=GapLog())
    assert (devices[0]["memory_used_bytes"], devices[0]["memory_free_bytes"]) == (650, 350)
