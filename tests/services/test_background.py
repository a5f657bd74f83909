"""``Background`` keeps a bounded record of failures: a bot failing on every request must not
grow (it grew by 4 MB per 1,000 errors, each traceback holding its frames' locals)."""

from __future__ import annotations

import asyncio
import gc
import logging
import tracemalloc

import pytest

from bot.services.background import KEEP_ERRORS, Background


async def _fail(i: int) -> None:
    payload = bytearray(4096)  # a local the traceback would keep alive
    raise RuntimeError(f"failure {i} ({len(payload)})")


async def _settle(bg: Background) -> None:
    """Drain, then let the loop run the callbacks that still reference finished tasks."""
    await bg.drain()
    for _ in range(3):
        await asyncio.sleep(0)
    gc.collect()


async def test_a_thousand_failures_keep_the_newest_few_without_tracebacks(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.CRITICAL, logger="bot.services.background")
    bg = Background()
    for i in range(10):  # warm up allocations that are not per failure
        bg.spawn(_fail(i))
    await _settle(bg)
    tracemalloc.start()
    start, _ = tracemalloc.get_traced_memory()

    for i in range(1000):
        bg.spawn(_fail(i))
    await _settle(bg)
    grown = tracemalloc.get_traced_memory()[0] - start
    tracemalloc.stop()

    assert bg.failures == 1010
    assert len(bg.errors) == KEEP_ERRORS
    assert str(bg.errors[-1]).startswith("failure 999")
    assert all(e.__traceback__ is None for e in bg.errors)
    assert grown < 200_000, f"grew by {grown} bytes over 1,000 failures"


async def test_a_failure_is_logged_once_with_its_traceback(
    caplog: pytest.LogCaptureFixture,
) -> None:
    bg = Background()
    bg.spawn(_fail(1), name="job")
    await bg.drain()

    logged = [r for r in caplog.records if r.name == "bot.services.background"]
    assert len(logged) == 1 and logged[0].exc_info is not None
    assert "job" in logged[0].getMessage()
