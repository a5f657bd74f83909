"""GPU devices and GPU processes through NVML: the only place that imports ``pynvml``.

The NVML module is injectable: ``read_gpus(None, ...)`` imports the real ``pynvml`` (package
``nvidia-ml-py``) lazily, tests and the sandbox pass ``gpunode_sandbox.fake_nvml.FakeNvml``. No
library, no driver, no permission or no GPU is a recorded gap, never an exception.

API versions handled:
- memory: ``nvmlDeviceGetMemoryInfo(h, version=nvmlMemory_v2)`` when the binding has
  ``nvmlMemory_v2`` and the driver the ``_v2`` symbol; else v1 (no ``reserved``).
- processes: ``nvmlDeviceGetComputeRunningProcesses`` (v3 in current bindings), falling back to
  ``_v2`` when the driver lacks the v3 symbol (FUNCTION_NOT_FOUND) or the struct version
  mismatches. ``usedGpuMemory`` of None or NVML_VALUE_NOT_AVAILABLE becomes None.
  PIDs are host (init-namespace) PIDs: the driver ignores PID namespaces.

Seen on real hardware (bench/nvml.py on an NVIDIA H200, driver 580.159.04, 2026-12-04; the
question reference §6/§8 left open): v2 ``used`` does not include ``reserved`` (616 MiB there,
in use before any process ran); ``total == free + used + reserved`` to the byte; v1 ``used`` is
v2 ``used + reserved`` and v1 ``free`` is v2's. Run as the Job runs (uid 65534, no
capabilities), NVML listed every process's PID (the host's) and ``usedGpuMemory``, each equal
to nvidia-smi's to the MiB. We still record ``used`` exactly as NVML returns it and
``reserved`` beside it, and derive nothing from an identity one driver showed.
"""

from __future__ import annotations

from bot.collectors import hostos
from bot.collectors.gaps import GapLog

TYPE_CHECKING = False  # importing typing costs ~3 ms of `gpunode collect`'s start-up
if TYPE_CHECKING:
    from typing import Any

_NOT_AVAILABLE = (1 << 64) - 1  # NVML_VALUE_NOT_AVAILABLE as an unsigned long long
_INIT_REASONS = {
    12: "NVML library not found (no NVIDIA driver userspace on this node or not mounted)",
    9: "NVIDIA driver not loaded",
    4: "no permission to use NVML (run privileged or with the NVIDIA runtime)",
}
#: the gap code of each of those
_INIT_CODES = {12: "nvml_library_missing", 9: "nvidia_driver_not_loaded", 4: "nvml_no_permission"}
_FALLBACK_CODES = {13, 25}  # FUNCTION_NOT_FOUND, ARGUMENT_VERSION_MISMATCH
_NOT_SUPPORTED = 3


def _text(value: object) -> str:
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)


def _code(exc: BaseException) -> int | None:
    value = getattr(exc, "value", None)
    return value if isinstance(value, int) else None


def load_pynvml(gaps: GapLog, *, dev: str = "/dev") -> Any | None:
    """The real ``pynvml`` module, or None with a gap.

    NVML talks to the driver through ``/dev/nvidiactl`` in *this* container; without it
    nvmlInit can only fail, so we record that instead of paying for the import (~15 ms).
    """
    if not hostos.exists(f"{dev}/nvidiactl"):
        gaps.add(
            "nvml",
            f"no {dev}/nvidiactl: NVIDIA driver not loaded or GPUs not exposed to the collector",
            "no_nvidiactl",
            {"path": f"{dev}/nvidiactl"},
        )
        return None
    try:
        import pynvml
    except ImportError:
        gaps.add(
            "nvml", "nvidia-ml-py (pynvml) is not installed in the collector image", "no_pynvml"
        )
        return None
    return pynvml


def _memory(nv: Any, handle: object) -> tuple[Any, bool]:
    version = getattr(nv, "nvmlMemory_v2", None)
    if version is not None:
        try:
            return nv.nvmlDeviceGetMemoryInfo(handle, version=version), True
        except nv.NVMLError as exc:
            if _code(exc) not in _FALLBACK_CODES | {_NOT_SUPPORTED}:
                raise
        except TypeError:  # very old bindings without the version argument
            pass
    return nv.nvmlDeviceGetMemoryInfo(handle), False


def _processes(nv: Any, handle: object) -> list[Any]:
    names = (
        "nvmlDeviceGetComputeRunningProcesses",
        "nvmlDeviceGetComputeRunningProcesses_v2",
    )
    last: BaseException | None = None
    for name in names:
        fn = getattr(nv, name, None)
        if fn is None:
            continue
        try:
            return list(fn(handle))
        except nv.NVMLError as exc:
            if _code(exc) not in _FALLBACK_CODES:
                raise
            last = exc
    if last is not None:
        raise last
    return []


def _used_memory(value: object) -> int | None:
    if not isinstance(value, int) or value >= _NOT_AVAILABLE or value < 0:
        return None
    return value


def _device(nv: Any, index: int, gaps: GapLog) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    handle = nv.nvmlDeviceGetHandleByIndex(index)
    uuid = _text(nv.nvmlDeviceGetUUID(handle))
    mem, v2 = _memory(nv, handle)
    util: int | None = None
    try:
        util = int(nv.nvmlDeviceGetUtilizationRates(handle).gpu)
    except (nv.NVMLError, AttributeError):
        util = None
    pci: str | None = None
    try:
        pci = _text(nv.nvmlDeviceGetPciInfo(handle).busId)
    except (nv.NVMLError, AttributeError):
        pci = None
    device = {
        "index": index,
        "uuid": uuid,
        "name": _text(nv.nvmlDeviceGetName(handle)),
        "memory_total_bytes": int(mem.total),
        "memory_used_bytes": int(mem.used),
        "memory_free_bytes": int(mem.free),
        "memory_reserved_bytes": int(mem.reserved) if v2 else None,
        "utilization_gpu_percent": util,
        "pci_bus_id": pci,
    }
    procs: list[dict[str, Any]] = []
    try:
        infos = _processes(nv, handle)
    except nv.NVMLError as exc:
        gaps.add(
            f"nvml:gpu{index}:processes", f"not readable ({exc})", "unreadable", {"error": str(exc)}
        )
        infos = []
    for info in infos:
        procs.append(
            {
                "gpu_index": index,
                "gpu_uuid": uuid,
                "pid": int(info.pid),
                "used_gpu_memory_bytes": _used_memory(getattr(info, "usedGpuMemory", None)),
            }
        )
    return device, procs


def read_gpus(
    nvml: Any | None, *, gaps: GapLog
) -> tuple[list[dict[str, Any]], list[dict[str, Any]], str | None]:
    """(GpuDevice fields, GpuProcess fields without pod/command, driver version)."""
    nv = nvml if nvml is not None else load_pynvml(gaps)
    if nv is None:
        return [], [], None
    try:
        nv.nvmlInit()
    except nv.NVMLError as exc:
        code = _code(exc)
        known = _INIT_REASONS.get(code or 0)
        if known is not None:
            gaps.add("nvml", known, _INIT_CODES[code or 0])
        else:
            gaps.add("nvml", f"nvmlInit failed ({exc})", "nvml_init_failed", {"error": str(exc)})
        return [], [], None
    devices: list[dict[str, Any]] = []
    processes: list[dict[str, Any]] = []
    driver: str | None = None
    try:
        driver = _text(nv.nvmlSystemGetDriverVersion())
        count = int(nv.nvmlDeviceGetCount())
        if count == 0:
            gaps.add("nvml", "no GPU visible to NVML on this node", "no_gpu_visible")
        for index in range(count):
            try:
                device, procs = _device(nv, index, gaps)
            except nv.NVMLError as exc:
                gaps.add(
                    f"nvml:gpu{index}", f"not readable ({exc})", "unreadable", {"error": str(exc)}
                )
                continue
            devices.append(device)
            processes += procs
    except nv.NVMLError as exc:
        gaps.add("nvml", f"query failed ({exc})", "nvml_query_failed", {"error": str(exc)})
    finally:
        try:  # noqa: SIM105 - contextlib costs start-up time on every node
            nv.nvmlShutdown()
        except nv.NVMLError:
            pass
    return devices, processes, driver
