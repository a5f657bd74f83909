"""``warm_up``: what ``gpunode serve`` does after start-up, before it takes traffic.

Each step is work that would otherwise run the first time a command needs it, holding the
interpreter lock (or the loop itself) while slash commands wait for their acks (issue #25):

- every view template is compiled (``bot.render.environment.compile_views``: 3 s of CPU,
  else 50 ms a template in the first diagnoses);
- the worker process the bot analyses and draws charts in (``bot.offloading.Offloader``) is
  started, and imports matplotlib there (it builds its font cache on first import: seconds
  on a fresh home, far more on a busy node; each later worker, one a diagnosis, reads that
  cache); the bot's own process never imports it. Idle, it ends ``WORKER_IDLE_S`` later;
- the heap is settled (``bot.wiring.heap.settle_heap``): start-up's objects, the compiled
  templates included, out of the full collections.
"""

from __future__ import annotations

import asyncio

from bot.offloading import Offloader
from bot.render.environment import compile_views
from bot.wiring.heap import settle_heap
from bot.wiring.runtime import IMPORT_CHARTS, Runtime


async def warm_up(runtime: Runtime) -> None:
    """Compile the templates, start the worker and import the charts there, settle the heap.
    Call after ``build_runtime``, before the listener starts."""
    await warm_up_with(runtime.services.diagnose.analyst.offload)


async def warm_up_with(offload: Offloader) -> None:
    """``warm_up`` for the analysis worker ``offload`` (a benchmark that builds no runtime
    holds what serve holds through this)."""
    await asyncio.to_thread(compile_views)
    await asyncio.to_thread(offload.start)  # sent IMPORT_CHARTS first
    await offload.run(IMPORT_CHARTS)  # answered once that import (the font cache) is done
    settle_heap()  # start-up's objects out of the full collections (bot/wiring/heap.py)
