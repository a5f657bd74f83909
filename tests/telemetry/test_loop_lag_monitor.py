"""``LoopLag`` measures how long the event loop was kept from running, and reports each
sample to ``gpunode_event_loop_lag_seconds``."""

from __future__ import annotations

import asyncio
import time

from bot.telemetry.lag import LoopLag
from bot.telemetry.metrics import Metrics


async def test_a_blocked_loop_shows_as_lag_in_the_histogram() -> None:
    metrics = Metrics()
    lag = LoopLag(metrics.event_loop_lag, interval_s=0.01)
    lag.start()
    await asyncio.sleep(0.05)
    time.sleep(0.3)  # noqa: ASYNC251 - the blocking call under test
    await asyncio.sleep(0.05)
    await lag.stop()
    body, _ = await metrics.render()
    assert lag.max_s >= 0.25  # a load can only add to it
    text = body.decode()
    assert "gpunode_event_loop_lag_seconds_bucket" in text
    count = next(
        float(line.split()[-1])
        for line in text.splitlines()
        if line.startswith("gpunode_event_loop_lag_seconds_count")
    )
    assert count == lag.samples > 0


def test_a_collection_on_another_thread_is_seen_with_that_threads_name() -> None:
    """``GcPauses`` reports the longest garbage collection on any thread and where it ran."""
    import gc
    import threading

    from bot.telemetry.lag import GcPauses

    held = [[i] for i in range(200_000)]  # something for a full collection to walk
    with GcPauses() as pauses:
        worker = threading.Thread(target=gc.collect, name="collector-under-test")
        worker.start()
        worker.join()
    del held
    assert pauses.runs >= 1
    assert pauses.worst == "collector-under-test, generation 2"
    assert pauses.max_wall_s >= pauses.max_cpu_s > 0
