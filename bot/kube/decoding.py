"""``PageDecoder``: decode and reduce list pages in a process of its own.

A thread cannot keep the event loop free here: ``json.loads`` of a 500-pod page (about 1 MB)
holds the interpreter lock for its whole run, 10 ms on an idle core and 65-380 ms measured on
a loaded 2-core machine (issue #25), and the loop waits that long. A worker process decodes
without that lock, on another core, while this process fetches the next page; it returns each
page reduced to a few slim records, so neither process ever holds the whole list.

One worker per cluster, started for the first page of ``INLINE_BYTES`` or more (``spawn``:
safe beside the gateway's threads), its garbage collector off (it only decodes JSON, which
has no cycles, and frees each page before the next). Where no process can be started, pages
are decoded on the calling thread with the collector paused, as before.
"""

from __future__ import annotations

import gc
import logging
import multiprocessing
import threading
from collections.abc import Callable
from concurrent.futures import Future, ProcessPoolExecutor
from typing import TypeVar

from bot.kube.transport import gc_paused

log = logging.getLogger(__name__)
T = TypeVar("T")
#: pages smaller than this are decoded on the calling thread (gc paused): a 256 KiB page
#: decodes in a few ms, and a small cluster, or a one-shot `gpunode top` in the terminal,
#: never pays for starting the worker (seconds on a loaded machine)
INLINE_BYTES = 256 * 1024


def _quiet_worker() -> None:
    gc.disable()


class PageDecoder:
    def __init__(self, *, use_process: bool = True) -> None:
        self._use_process = use_process
        self._pool: ProcessPoolExecutor | None = None
        self._lock = threading.Lock()

    def _executor(self) -> ProcessPoolExecutor | None:
        with self._lock:
            if self._pool is None and self._use_process:
                try:
                    self._pool = ProcessPoolExecutor(
                        max_workers=1,
                        mp_context=multiprocessing.get_context("spawn"),
                        initializer=_quiet_worker,
                    )
                except (OSError, ValueError) as exc:
                    log.warning("no decoder process (%s); list pages are decoded here", exc)
                    self._use_process = False
            return self._pool

    def submit(
        self, fn: Callable[[bytes], T], body: bytes, *, process: bool | None = None
    ) -> Future[T]:
        """``fn(body)`` in the worker (``fn`` must be a module-level function or a partial
        of one), or here for a small page; ``process=True``: in the worker whatever the
        size (the pieces of one streamed answer all go where its state is kept)."""
        wanted = len(body) >= INLINE_BYTES if process is None else process
        pool = self._executor() if wanted else None
        if pool is not None:
            return pool.submit(fn, body)
        done: Future[T] = Future()
        try:
            with gc_paused():
                done.set_result(fn(body))
        except Exception as exc:
            done.set_exception(exc)
        return done

    def close(self) -> None:
        with self._lock:
            pool, self._pool = self._pool, None
            self._use_process = False
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)
