"""Kernel rules: unreclaimable slab and socket buffers (invisible to kubelet eviction)."""

from __future__ import annotations

import pytest

from bot.core.diagnosis.rules import kernel
from bot.core.model.thresholds import DEFAULT
from tests.core.analysis_builders import GI, bundle, context, meminfo


@pytest.mark.parametrize(
    ("sunreclaim", "severity"),
    [(30, "warning"), (5, None), (70, "critical"), (25.0, None), (25.2, "warning")],
)
def test_unreclaimable_slab_grades_by_share_of_memtotal(
    sunreclaim: float, severity: str | None
) -> None:
    ctx = context(bundle(meminfo=meminfo(251, s_unreclaim=sunreclaim)))
    found = kernel.slab_unreclaimable_high(ctx, DEFAULT)
    assert [f.severity for f in found] == ([severity] if severity else [])
    if found:
        assert found[0].params["eviction_blind"] == 1


def test_slab_rule_is_silent_without_sunreclaim() -> None:
    assert kernel.slab_unreclaimable_high(context(bundle(meminfo=meminfo(251))), DEFAULT) == []


@pytest.mark.parametrize(("socket_gib", "fires"), [(1, False), (13, True), (None, False)])
def test_socket_memory_is_its_own_line(socket_gib: float | None, fires: bool) -> None:
    sock = int(socket_gib * GI) if socket_gib is not None else None
    ctx = context(bundle(meminfo=meminfo(251), socket_memory_bytes=sock))
    assert bool(kernel.socket_memory_high(ctx, DEFAULT)) is fires
