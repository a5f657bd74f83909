"""free(1) arithmetic for both procps formulas, and the kubelet working set."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bot.core.diagnosis.memory import (
    free_figures,
    free_figures_data,
    parse_procps_version,
    uses_available,
    working_set_bytes,
)
from bot.core.model.evidence import MemInfo

KIB = 1024
BASE = {
    "mem_total_bytes": 1000 * KIB,
    "mem_free_bytes": 100 * KIB,
    "mem_available_bytes": 600 * KIB,
    "buffers_bytes": 50 * KIB,
    "cached_bytes": 300 * KIB,
    "s_reclaimable_bytes": 20 * KIB,
    "shmem_bytes": 7 * KIB,
    "swap_total_bytes": 64 * KIB,
    "swap_free_bytes": 60 * KIB,
}


@pytest.mark.parametrize(
    ("text", "version"),
    [
        ("free from procps-ng 4.0.2\n", (4, 0, 2)),
        ("free from procps-ng 3.3.17", (3, 3, 17)),
        ("free (procps-ng) 4.0.4", (4, 0, 4)),
        ("free from procps-ng 4.1", (4, 1, 0)),
        ("no version here", None),
    ],
)
def test_procps_version_is_read_from_free_version(
    text: str, version: tuple[int, int, int] | None
) -> None:
    assert parse_procps_version(text) == version


@pytest.mark.parametrize(
    ("version", "modern"),
    [((4, 0, 2), True), ((4, 0, 1), True), ((4, 0, 0), False), ((3, 3, 17), False)],
)
def test_the_used_formula_changed_in_procps_4_0_1(
    version: tuple[int, int, int], modern: bool
) -> None:
    assert uses_available(version) is modern


@pytest.mark.parametrize(
    ("change", "version", "used", "legacy", "available"),
    [
        ({}, (4, 0, 2), 400, 530, 600),
        ({}, (3, 3, 17), 530, 530, 600),
        ({"mem_available_bytes": None}, (4, 0, 2), 900, 530, 100),  # no MemAvailable: MemFree
        ({"mem_available_bytes": 5000 * KIB}, (4, 0, 2), 900, 530, 100),  # > total: MemFree
        ({"cached_bytes": 2000 * KIB}, (3, 3, 17), 900, 900, 600),  # negative: total - free
    ],
)
def test_used_follows_the_procps_formula(
    change: dict[str, int | None],
    version: tuple[int, int, int],
    used: int,
    legacy: int,
    available: int,
) -> None:
    figures = free_figures_data({**BASE, **change}, procps_version=version)
    assert figures["used_bytes"] == used * KIB
    assert figures["used_legacy_bytes"] == legacy * KIB
    assert figures["available_bytes"] == available * KIB


def test_cache_and_swap_are_derived_like_free() -> None:
    f = free_figures(MemInfo(**BASE))  # type: ignore[arg-type]
    assert (f.cache_bytes, f.buff_cache_bytes) == (320 * KIB, 370 * KIB)
    assert (f.swap_used_bytes, f.shared_bytes) == (4 * KIB, 7 * KIB)


@given(
    total=st.integers(0, 2**50),
    free=st.integers(0, 2**50),
    avail=st.one_of(st.none(), st.integers(0, 2**51)),
    buffers=st.integers(0, 2**45),
    cached=st.integers(0, 2**50),
)
def test_free_figures_never_go_negative_for_sane_meminfo(
    total: int, free: int, avail: int | None, buffers: int, cached: int
) -> None:
    free = min(free, total)
    data = free_figures_data(
        {
            "mem_total_bytes": total,
            "mem_free_bytes": free,
            "mem_available_bytes": avail,
            "buffers_bytes": buffers,
            "cached_bytes": cached,
        }
    )
    assert 0 <= data["used_bytes"] <= total
    assert 0 <= data["used_legacy_bytes"] <= total


@pytest.mark.parametrize(
    ("usage", "inactive", "ws"), [(100, 30, 70), (100, 300, 0), (100, None, 100), (None, 5, None)]
)
def test_working_set_is_usage_minus_inactive_file_floored(
    usage: int | None, inactive: int | None, ws: int | None
) -> None:
    assert working_set_bytes(usage, inactive) == ws
