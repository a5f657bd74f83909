"""``world``: the use-case test world (tests/services/world.py) on a temp SQLite file."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.services.world import World, make_world


@pytest.fixture
async def world(tmp_path: Path) -> AsyncIterator[World]:
    w = await make_world(tmp_path / "gpunode.db")
    yield w
    await w.bg.drain(timeout_s=30)
    for store in (w.store, *w.extra):
        await store.close()
    assert not w.bg.errors, w.bg.errors
