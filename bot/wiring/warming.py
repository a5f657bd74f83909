"""``warm_up``: what ``gpunode serve`` does after start-up, before it takes traffic.

Each step is work that would otherwise run the first time a command needs it, holding the
interpreter lock (or the loop itself) while slash commands wait for their acks (issue #25):

- the worker process the bot analyses and draws charts in (``bot.offloading.Offloader``) is
  started, and imports matplotlib there (it builds its font cache on first import: seconds
  on a fresh home, far more on a busy node); the bot's own process never imports it;
- the Kubernetes client's ``CoreV1Api`` (the diagnostic Job's pod watch) is imported, with
  the ~250 models it names (``bot.kube.jobs.import_watch_api``: 0.4 s of CPU);
- every view template is compiled (``bot.render.environment.compile_views``: 3 s of CPU,
  else 50 ms a template in the first diagnoses);
- the heap is settled (``bot.wiring.heap.settle_heap``): start-up's objects, the compiled
  templates included, out of the full collections.
"""

from __future__ import annotations

import asyncio

from bot.kube.jobs import import_watch_api
from bot.offloading import Named
from bot.render.environment import compile_views
from bot.wiring.heap import settle_heap
from bot.wiring.runtime import Runtime

#: ``bot.charts.rendering.render_pngs`` of no charts: imports matplotlib where it runs
_IMPORT_CHARTS = Named("bot.charts.rendering:render_pngs")


async def warm_up(runtime: Runtime) -> None:
    """Start the worker and import the charts there, compile the templates, import the
    Kubernetes client's watch API, settle the heap.
    Call after ``build_runtime``, before the listener starts."""
    offload = runtime.services.diagnose.analyst.offload
    await asyncio.to_thread(offload.start)
    await offload.run(_IMPORT_CHARTS, {}, "en")
    await asyncio.to_thread(compile_views)
    await asyncio.to_thread(import_watch_api)
    settle_heap()  # start-up's objects out of the full collections (bot/wiring/heap.py)
