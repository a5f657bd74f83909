"""``PageDecoder``: decode and reduce list pages in a process of its own.

A thread cannot keep the event loop free here: ``json.loads`` of a 500-pod page (about 1 MB)
holds the interpreter lock for its whole run, 10 ms on an idle core and 65-380 ms measured on
a loaded 2-core machine (issue #25), and the loop waits that long. A worker process decodes
without that lock, on another core, while this process fetches the next page; it returns each
page reduced to a few slim records, so neither process ever holds the whole list.

One worker per cluster, started for the first page of ``INLINE_BYTES`` or more, its garbage
collector off (it only decodes JSON, which has no cycles, and frees each page before the
next). The worker is ``python -m bot.kube.decoding``, a ``bot.working.WorkerProcess``
(length-prefixed pickles on its pipes, answers in order); it imports only the modules of the
functions it is sent: a serving bot's informers send ``bot.kube.cutting``'s, kept free of
the ``kubernetes`` client (about 17 MiB), of pydantic and the core's models (about 20 MiB:
the decoder holds 16 MiB of imports, not 38) and of ``asyncio``. A worker that exits fails
the pages in flight and the next page starts another. Where no process can be started, pages
are decoded on the calling thread with the collector paused, as before.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from concurrent.futures import Future
from typing import TypeVar

from bot.kube.pages import gc_paused
from bot.working import WorkerExitedError, WorkerSlot, serve_stdio

log = logging.getLogger(__name__)
T = TypeVar("T")
#: pages smaller than this are decoded on the calling thread (gc paused): a 256 KiB page
#: decodes in a few ms, and a small cluster, or a one-shot `gpunode top` in the terminal,
#: never pays for starting the worker (seconds on a loaded machine)
INLINE_BYTES = 256 * 1024


#: the worker process ended before it answered (``bot.working.WorkerExitedError``)
DecoderExitedError = WorkerExitedError


class PageDecoder:
    def __init__(self, *, use_process: bool = True) -> None:
        self._slot = WorkerSlot(
            "bot.kube.decoding",
            name="decoder",
            use_process=use_process,
            fallback="list pages are decoded here",
        )

    @property
    def pid(self) -> int | None:
        """The worker process's id, or None when none was started (or it exited)."""
        return self._slot.pid

    def submit(
        self, fn: Callable[[bytes], T], body: bytes, *, process: bool | None = None
    ) -> Future[T]:
        """``fn(body)`` in the worker (``fn`` must be a module-level function or a partial
        of one), or here for a small page; ``process=True``: in the worker whatever the
        size (the pieces of one streamed answer all go where its state is kept)."""
        wanted = len(body) >= INLINE_BYTES if process is None else process
        worker = self._slot.live() if wanted else None
        if worker is not None:
            return worker.submit(fn, body)
        done: Future[T] = Future()
        try:
            with gc_paused():
                done.set_result(fn(body))
        except Exception as exc:
            done.set_exception(exc)
        return done

    def close(self) -> None:
        self._slot.close()


if __name__ == "__main__":
    serve_stdio(collect_garbage=False)
