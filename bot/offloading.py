"""``Offloader``: CPU-bound pure calls for the event loop, in a worker process beside it.

The worker is ``bot.working``'s (``python -m bot.working``): it imports only that module and
the modules of the functions it is sent, never this one (``asyncio``, which the worker has no
use for). A long-running bot keeps one for its analyses and charts (``bot.services.analysing``,
``bot.slack.presenter``), ended when idle (``WORKER_IDLE_S``) or when a diagnosis lets go of
it (``Offloader.held``).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import threading
import time
from collections.abc import AsyncIterator, Callable
from typing import ParamSpec, TypeVar

from bot.working import WorkerExitedError, WorkerProcess, WorkerSlot, call

log = logging.getLogger(__name__)
T = TypeVar("T")
P = ParamSpec("P")
#: how long an ``Offloader`` call may wait for its worker (its queue included) before the
#: worker is taken for stuck: an analysis of a 5,000-process node takes seconds on a loaded
#: machine, and a diagnosis's charts and analyses queue behind each other
WORKER_TIMEOUT_S = 300.0
#: how long a long-running bot's worker may sit idle after a call made outside any hold
#: (``Offloader.held``: a diagnosis holds it) before it ends (the next call starts another):
#: once it has drawn a chart it holds matplotlib (82-98 MiB resident, all told) beside the
#: bot's own memory, which an idle bot should not keep (issue #25's RSS budget: 300 MiB for
#: the bot's processes at 5,000 nodes)
WORKER_IDLE_S = 10.0


class Offloader:
    """CPU-bound pure calls for the event loop: in one worker process (``process=True``,
    started by the first call) or on threads (``asyncio.to_thread``).

    One worker, its calls answered in order (bounded by what the bot keeps in flight: its
    diagnoses, their charts). A worker that exits fails only the calls in flight there:
    each is computed again on a thread, with the reason logged, and the next call starts
    another worker; where no process can be started at all, every call runs on a thread
    from then on, as after ``close``. A call the worker has not answered in ``timeout_s``
    (queue included) ends the worker: it is stuck, so its calls go to threads as above.
    With ``idle_s``, a worker that has had no call in flight for that long ends, and the next
    call starts another (its memory, matplotlib's included, is not kept by an idle bot);
    ``held()`` keeps it for a piece of work of several calls (a diagnosis: its analyses,
    then its charts) and ends it as soon as the last hold is released with no call in
    flight, without waiting ``idle_s``. ``prime``: a call (no arguments) each new worker is
    sent first, its answer dropped (the charts' import: a diagnosis's worker imports
    matplotlib while the diagnostic Job runs). Arguments and results must pickle; the
    functions are module-level (the worker imports their modules), so the worker computes
    what a thread would."""

    def __init__(
        self,
        *,
        process: bool = False,
        name: str = "worker",
        timeout_s: float = WORKER_TIMEOUT_S,
        idle_s: float | None = None,
        prime: Callable[[], object] | None = None,
    ) -> None:
        self._name = name
        self.timeout_s = timeout_s
        self.idle_s = idle_s
        self.prime = prime
        self._slot = WorkerSlot(
            "bot.working", name=name, use_process=process, fallback="its work runs on threads"
        )
        self._in_flight = 0
        self._holds = 0
        self._last_done = time.monotonic()
        self._primed: WorkerProcess | None = None

    @property
    def pid(self) -> int | None:
        """The worker process's id, or None when none runs (none started yet, or it exited)."""
        return self._slot.pid

    def start(self) -> int | None:
        """Start the worker now (before traffic: starting a process blocks the caller while
        it forks, so not on an event loop that serves); its id, None where it runs none."""
        worker = self._live()
        return worker.pid if worker is not None else None

    def _live(self) -> WorkerProcess | None:
        """The slot's worker (started if none runs), sent ``prime`` first when it is new."""
        worker = self._slot.live()
        if worker is not None and self.prime is not None and worker is not self._primed:
            self._primed = worker
            worker.submit(call, self.prime)  # answered first; its answer (or failure) dropped
        return worker

    @contextlib.asynccontextmanager
    async def held(self) -> AsyncIterator[None]:
        """The worker kept while inside (started now, off the event loop, and primed, so its
        imports overlap what the holder waits for first); on leaving the last hold with no
        call in flight it ends at once (with ``idle_s``), its memory back to the machine."""
        self._holds += 1
        try:
            await asyncio.to_thread(self._live)
            yield
        finally:
            self._holds -= 1
            self._last_done = time.monotonic()
            if self.idle_s is not None and not self._holds and not self._in_flight:
                self._retire()

    async def run(self, fn: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs) -> T:
        """``fn(*args, **kwargs)``, in the worker where there is one."""
        job = functools.partial(fn, *args, **kwargs)
        worker = self._live()
        if worker is not None:
            try:
                self._in_flight += 1
                async with asyncio.timeout(self.timeout_s):
                    return await asyncio.wrap_future(worker.submit(call, job))
            except WorkerExitedError as exc:
                log.warning("the %s process failed (%s); on a thread instead", self._name, exc)
            except TimeoutError:
                log.warning(
                    "the %s process did not answer in %.0f s; ending it, on a thread instead",
                    self._name,
                    self.timeout_s,
                )
                with contextlib.suppress(OSError):
                    worker.proc.kill()  # its reader fails the others: they go to threads too
            finally:
                self._done()
        return await asyncio.to_thread(job)

    def _done(self) -> None:
        """A worker call ended (on the event loop): with none left in flight, end the worker
        once it has been idle ``idle_s``."""
        self._in_flight -= 1
        self._last_done = time.monotonic()
        if self.idle_s is not None and self._in_flight == 0:
            asyncio.get_running_loop().call_later(self.idle_s, self._retire_if_idle)

    def _retire_if_idle(self) -> None:
        if self.idle_s is None or self._in_flight or self._holds:
            return
        if time.monotonic() - self._last_done < self.idle_s * 0.99:  # timers may fire early
            return  # a later call's own timer decides
        self._retire()

    def _retire(self) -> None:
        worker = self._slot.detach()
        if worker is not None:
            log.info("the %s process is idle; ending it", self._name)
            # its input closed, it exits; waiting for that blocks, so not on the loop
            threading.Thread(target=worker.close, name=f"{self._name}-retire").start()

    def close(self) -> None:
        """End the worker (what it was computing is dropped); later calls run on threads.
        Blocks until the worker ends: call it off the event loop."""
        self._slot.close()
