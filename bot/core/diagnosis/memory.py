"""Host memory arithmetic: what ``free`` prints, and the kubelet's working set. Pure.

No I/O here. The collector calls the ``*_data`` functions on plain dicts (its hot path avoids
pydantic so that ``gpunode collect`` starts fast); everything else calls the typed wrappers.

``free`` (procps-ng, ``library/meminfo.c``; older ``proc/sysinfo.c``):

- ``cache = Cached + SReclaimable``; ``buff/cache = Buffers + cache``; ``shared = Shmem``.
- procps-ng >= 4.0.1: ``used = MemTotal - MemAvailable``. ``MemAvailable`` missing (0) or
  greater than ``MemTotal`` (distorted inside some containers) is replaced by ``MemFree``;
  a negative result falls back to ``MemTotal - MemFree``.
- procps <= 4.0.0 (and 3.3.x): ``used = total - free - buffers - cache``, falling back to
  ``total - free`` when negative. (3.3.x estimated a missing MemAvailable from
  ``min_free_kbytes``; that needs a file outside meminfo, so we use the 4.x fallback, MemFree.)
- swap used = ``SwapTotal - SwapFree`` when ``SwapFree < SwapTotal``, else 0.
"""

from __future__ import annotations

TYPE_CHECKING = False  # importing typing costs ~3 ms of `gpunode collect`'s start-up
if TYPE_CHECKING:  # collections.abc too: it imports collections (~1.5 ms)
    from collections.abc import Mapping

    from bot.core.model.evidence import FreeFigures, MemInfo

#: first procps-ng release whose ``free`` computes used as total - available
MODERN_FREE = (4, 0, 1)

_VERSION = r"(?:procps(?:-ng)?\D*)?(\d+)\.(\d+)(?:\.(\d+))?"


def parse_procps_version(text: str) -> tuple[int, int, int] | None:
    """``free --version`` output (``free from procps-ng 4.0.2``) -> ``(4, 0, 2)``."""
    import re  # here: the collector imports this module, and ``re`` costs it ~7 ms of start-up

    match = re.search(_VERSION, text)
    if match is None:
        return None
    major, minor, patch = match.group(1), match.group(2), match.group(3) or "0"
    return int(major), int(minor), int(patch)


def uses_available(procps_version: tuple[int, int, int] | None) -> bool:
    """Whether that ``free`` prints used = total - available (None means a modern one)."""
    return procps_version is None or procps_version >= MODERN_FREE


def free_figures_data(
    meminfo: Mapping[str, int | None], *, procps_version: tuple[int, int, int] | None = None
) -> dict[str, int]:
    """FreeFigures fields from MemInfo fields (``mem_total_bytes`` ...), as plain ints.

    ``used_bytes`` follows the given procps version (default: the modern formula);
    ``used_legacy_bytes`` is always the pre-4.0.1 formula.
    """

    def get(key: str) -> int:
        return meminfo.get(key) or 0

    total, free = get("mem_total_bytes"), get("mem_free_bytes")
    buffers = get("buffers_bytes")
    cache = get("cached_bytes") + get("s_reclaimable_bytes")
    available = get("mem_available_bytes")
    if available == 0 or available > total:
        available = free
    modern = total - available
    if modern < 0:
        modern = total - free
    legacy = total - free - buffers - cache
    if legacy < 0:
        legacy = total - free
    swap_total, swap_free = get("swap_total_bytes"), get("swap_free_bytes")
    return {
        "total_bytes": total,
        "used_bytes": modern if uses_available(procps_version) else legacy,
        "used_legacy_bytes": legacy,
        "free_bytes": free,
        "shared_bytes": get("shmem_bytes"),
        "buffers_bytes": buffers,
        "cache_bytes": cache,
        "buff_cache_bytes": buffers + cache,
        "available_bytes": available,
        "swap_total_bytes": swap_total,
        "swap_used_bytes": swap_total - swap_free if swap_free < swap_total else 0,
        "swap_free_bytes": swap_free,
    }


def free_figures(
    meminfo: MemInfo, procps_version: tuple[int, int, int] | None = None
) -> FreeFigures:
    """What ``free -b`` of that procps version prints for this meminfo (see module doc)."""
    from bot.core.model.evidence import FreeFigures

    data = free_figures_data(meminfo.model_dump(), procps_version=procps_version)
    return FreeFigures(**data)


def working_set_bytes(usage: int | None, inactive_file: int | None) -> int | None:
    """``usage - inactive_file`` floored at 0, as cAdvisor/the kubelet compute it.

    Without ``inactive_file`` the usage itself is the working set (nothing to subtract).
    """
    if usage is None:
        return None
    if inactive_file is None:
        return usage
    return max(usage - inactive_file, 0)
