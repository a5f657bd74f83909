"""A fake ``pynvml`` module: the NVML calls ``bot.collectors.nvml`` makes, driven by a spec.

Used by the tests, by the Kubernetes stand-in (its Job controller writes a spec per node and
runs ``gpunode collect --fake-nvml FILE``) and by anyone without a GPU. Behaves like
nvidia-ml-py: ``NVMLError`` carries ``.value`` (the real ``NVML_ERROR_*`` codes), calls before
``nvmlInit`` fail with UNINITIALIZED, v2 memory info only with ``version=nvmlMemory_v2``.

Spec (JSON; keep exactly, the stand-in writes it)::

    {
      "driver_version": "550.54.15",
      "memory_info_version": 2,          # 1: the driver lacks nvmlDeviceGetMemoryInfo_v2
      "fail": null,                      # or "library_not_found" | "driver_not_loaded"
                                         #    | "no_permission"  (nvmlInit raises that)
      "devices": [
        {"index": 0, "uuid": "GPU-...", "name": "NVIDIA H100 80GB HBM3",
         "memory_total_bytes": 85899345920, "memory_used_bytes": 1048576,
         "memory_reserved_bytes": 536870912,        # null with memory_info_version 1
         "utilization_gpu_percent": 97,             # null: NOT_SUPPORTED
         "pci_bus_id": "00000000:18:00.0",          # optional; default from the index
         "processes": [{"pid": 4242, "used_gpu_memory_bytes": 1048576}]}  # null: unknown
      ]
    }

``memory_used_bytes`` is what v2 calls ``used`` (allocations only) and
``memory_reserved_bytes`` the driver's and firmware's reserve. The fake keeps the identities an
H200 showed (driver 580.159.04, bench/nvml.py on real hardware, 2026-12-04): v2 ``total == free
+ used + reserved``; v1 ``used`` is v2 ``used + reserved`` and v1 ``free`` is v2's, so v1
``total == free + used``. A v1-only driver's spec may still carry a reserve: its v1 ``used``
counts it, and it has no other way to say so.
Optional extra key (tests only): ``"process_api": 3|2`` — with 2 the v3 process call raises
FUNCTION_NOT_FOUND, as on drivers older than the v3 symbol.
"""

# pynvml's names are the contract this fake implements, so they keep their camelCase:
# ruff: noqa: N802, N815, N816

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

NVML_SUCCESS = 0
NVML_ERROR_UNINITIALIZED = 1
NVML_ERROR_INVALID_ARGUMENT = 2
NVML_ERROR_NOT_SUPPORTED = 3
NVML_ERROR_NO_PERMISSION = 4
NVML_ERROR_DRIVER_NOT_LOADED = 9
NVML_ERROR_LIBRARY_NOT_FOUND = 12
NVML_ERROR_FUNCTION_NOT_FOUND = 13
NVML_ERROR_UNKNOWN = 999
NVML_VALUE_NOT_AVAILABLE = (1 << 64) - 1
nvmlMemory_v2 = 0x02000028  # sizeof(nvmlMemory_v2_t) | 2 << 24, as in nvidia-ml-py

_FAILS = {
    "library_not_found": NVML_ERROR_LIBRARY_NOT_FOUND,
    "driver_not_loaded": NVML_ERROR_DRIVER_NOT_LOADED,
    "no_permission": NVML_ERROR_NO_PERMISSION,
}
_MESSAGES = {
    NVML_ERROR_UNINITIALIZED: "Uninitialized",
    NVML_ERROR_INVALID_ARGUMENT: "Invalid Argument",
    NVML_ERROR_NOT_SUPPORTED: "Not Supported",
    NVML_ERROR_NO_PERMISSION: "Insufficient Permissions",
    NVML_ERROR_DRIVER_NOT_LOADED: "Driver Not Loaded",
    NVML_ERROR_LIBRARY_NOT_FOUND: "NVML Shared Library Not Found",
    NVML_ERROR_FUNCTION_NOT_FOUND: "Function Not Found",
}


class NVMLError(Exception):
    """Like ``pynvml.NVMLError``: ``value`` is the NVML return code."""

    def __init__(self, value: int) -> None:
        super().__init__(value)
        self.value = value

    def __str__(self) -> str:
        return _MESSAGES.get(self.value, f"Unknown Error ({self.value})")


@dataclass(frozen=True)
class _Memory:
    total: int
    free: int
    used: int
    reserved: int = 0
    version: int = 0


@dataclass(frozen=True)
class _Utilization:
    gpu: int
    memory: int = 0


@dataclass(frozen=True)
class _PciInfo:
    busIdLegacy: str
    domain: int
    bus: int
    device: int
    pciDeviceId: int
    pciSubSystemId: int
    busId: str


#: PCI buses of the eight GPUs of an HGX H100 board, a realistic default for the fake
DEFAULT_PCI_BUSES = (0x18, 0x2A, 0x3A, 0x5D, 0x9A, 0xAB, 0xBA, 0xDB)


def default_pci_bus_id(index: int) -> str:
    """``00000000:BB:00.0`` as NVML prints ``busId`` (8-digit domain, upper-case hex)."""
    bus = DEFAULT_PCI_BUSES[index] if index < len(DEFAULT_PCI_BUSES) else 0x100 - 1 - index
    return f"00000000:{bus:02X}:00.0"


@dataclass(frozen=True)
class _ProcessInfo:
    pid: int
    usedGpuMemory: int | None
    gpuInstanceId: int = 0xFFFFFFFF
    computeInstanceId: int = 0xFFFFFFFF


class FakeNvml:
    """Module-like object with pynvml's function names; build it with ``from_spec``."""

    NVMLError = NVMLError
    NVML_VALUE_NOT_AVAILABLE = NVML_VALUE_NOT_AVAILABLE
    nvmlMemory_v2 = nvmlMemory_v2

    def __init__(self, spec: dict[str, Any]) -> None:
        self.spec = spec
        self.devices: list[dict[str, Any]] = sorted(
            spec.get("devices", []), key=lambda d: int(d["index"])
        )
        self.initialized = 0
        self.calls: list[str] = []

    @classmethod
    def from_spec(cls, spec: dict[str, Any]) -> FakeNvml:
        return cls(spec)

    @classmethod
    def from_file(cls, path: str | Path) -> FakeNvml:
        return cls(json.loads(Path(path).read_text(encoding="utf-8")))

    def _check(self) -> None:
        if self.initialized <= 0:
            raise NVMLError(NVML_ERROR_UNINITIALIZED)

    def _device(self, handle: object) -> dict[str, Any]:
        self._check()
        if not isinstance(handle, int) or not 0 <= handle < len(self.devices):
            raise NVMLError(NVML_ERROR_INVALID_ARGUMENT)
        return self.devices[handle]

    def nvmlInit(self) -> None:
        self.calls.append("nvmlInit")
        fail = self.spec.get("fail")
        if fail:
            raise NVMLError(_FAILS.get(fail, NVML_ERROR_UNKNOWN))
        self.initialized += 1

    def nvmlShutdown(self) -> None:
        self._check()
        self.initialized -= 1

    def nvmlSystemGetDriverVersion(self) -> str:
        self._check()
        return str(self.spec.get("driver_version", ""))

    def nvmlDeviceGetCount(self) -> int:
        self._check()
        return len(self.devices)

    def nvmlDeviceGetHandleByIndex(self, index: int) -> int:
        self._check()
        if not 0 <= index < len(self.devices):
            raise NVMLError(NVML_ERROR_INVALID_ARGUMENT)
        return index

    def nvmlDeviceGetUUID(self, handle: object) -> str:
        return str(self._device(handle)["uuid"])

    def nvmlDeviceGetName(self, handle: object) -> str:
        return str(self._device(handle)["name"])

    def nvmlDeviceGetMemoryInfo(self, handle: object, version: int | None = None) -> _Memory:
        dev = self._device(handle)
        total, used = int(dev["memory_total_bytes"]), int(dev["memory_used_bytes"])
        reserved = int(dev.get("memory_reserved_bytes") or 0)
        free = max(total - used - reserved, 0)
        if not version:  # v1: the reserve is in ``used``, as an H200 showed (bench/nvml.py)
            self.calls.append("nvmlDeviceGetMemoryInfo")
            return _Memory(total=total, free=free, used=used + reserved)
        if int(self.spec.get("memory_info_version", 2)) < 2:
            raise NVMLError(NVML_ERROR_FUNCTION_NOT_FOUND)
        self.calls.append("nvmlDeviceGetMemoryInfo_v2")
        return _Memory(total=total, free=free, used=used, reserved=reserved, version=version)

    def nvmlDeviceGetPciInfo(self, handle: object) -> _PciInfo:
        """Like NVML's v3 PCI info: ``busId`` 8-digit domain, ``busIdLegacy`` 4-digit."""
        dev = self._device(handle)
        bus_id = str(dev.get("pci_bus_id") or default_pci_bus_id(int(dev["index"])))
        domain, bus, rest = bus_id.split(":")
        return _PciInfo(
            busIdLegacy=f"{domain[-4:]}:{bus}:{rest}",
            domain=int(domain, 16),
            bus=int(bus, 16),
            device=int(rest.split(".")[0], 16),
            pciDeviceId=0x233010DE,  # H100 SXM5 device id << 16 | NVIDIA vendor id
            pciSubSystemId=0x16C110DE,
            busId=bus_id,
        )

    def nvmlDeviceGetUtilizationRates(self, handle: object) -> _Utilization:
        value = self._device(handle).get("utilization_gpu_percent")
        if value is None:
            raise NVMLError(NVML_ERROR_NOT_SUPPORTED)
        return _Utilization(gpu=int(value))

    def _processes(self, handle: object) -> list[_ProcessInfo]:
        error = self._device(handle).get("processes_error")
        if error:  # MIG without the monitor capability: the listing is refused
            raise NVMLError(_FAILS.get(error, NVML_ERROR_UNKNOWN))
        return [
            _ProcessInfo(
                pid=int(p["pid"]),
                usedGpuMemory=(
                    None
                    if p.get("used_gpu_memory_bytes") is None
                    else int(p["used_gpu_memory_bytes"])
                ),
            )
            for p in self._device(handle).get("processes", [])
        ]

    def nvmlDeviceGetComputeRunningProcesses_v3(self, handle: object) -> list[_ProcessInfo]:
        self._device(handle)
        if int(self.spec.get("process_api", 3)) < 3:
            raise NVMLError(NVML_ERROR_FUNCTION_NOT_FOUND)
        self.calls.append("nvmlDeviceGetComputeRunningProcesses_v3")
        return self._processes(handle)

    def nvmlDeviceGetComputeRunningProcesses_v2(self, handle: object) -> list[_ProcessInfo]:
        self.calls.append("nvmlDeviceGetComputeRunningProcesses_v2")
        return self._processes(handle)

    def nvmlDeviceGetComputeRunningProcesses(self, handle: object) -> list[_ProcessInfo]:
        # current nvidia-ml-py: the unversioned name calls the v3 symbol
        return self.nvmlDeviceGetComputeRunningProcesses_v3(handle)
