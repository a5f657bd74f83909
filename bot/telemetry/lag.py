"""``LoopLag``: how long the event loop stays blocked, measured from inside it.

A task asks the loop to wake it every ``interval_s`` and records how late the wake-up came:
the lag is time in which no other coroutine ran (no ack, no reply, no heartbeat). Each lag
goes to ``gpunode_event_loop_lag_seconds`` (when given a ``Metrics``) and to ``max_s``,
the worst since the last ``reset``. Costs one timer per interval (20 per second by default).
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import threading
import time
from collections.abc import Callable

#: a wake-up every 50 ms: a stall of 100 ms (the bound issue #25 sets) cannot hide between
#: two samples, and the sampling itself costs nothing measurable
INTERVAL_S = 0.05


class LoopLag:
    def __init__(
        self, observe: Callable[[float], None] | None = None, *, interval_s: float = INTERVAL_S
    ) -> None:
        self.observe = observe
        self.interval_s = interval_s
        self.max_s = 0.0
        self.samples = 0
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        """Begin sampling on the running loop (idempotent)."""
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(
                self._run(), name="gpunode-loop-lag"
            )

    async def stop(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    def reset(self) -> None:
        self.max_s, self.samples = 0.0, 0

    async def _run(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            asked = loop.time()
            await asyncio.sleep(self.interval_s)
            lag = max(loop.time() - asked - self.interval_s, 0.0)
            self.samples += 1
            self.max_s = max(self.max_s, lag)
            if self.observe is not None:
                self.observe(lag)


class CallbackCpu:
    """The event loop thread's CPU time in each callback it runs, worst first: what this
    process's own code blocks the loop for, apart from the machine's load.

    ``LoopLag`` measures wall time, which any other process on a busy machine inflates (the
    loop is simply not scheduled); ``time.thread_time()`` around each callback counts only
    the CPU the loop thread itself spent in it, so a callback that does 5 ms of work reads
    5 ms however loaded the machine is. Waiting for the interpreter lock while a worker
    thread holds it is not CPU time either: that wait is bounded by the switch interval
    (5 ms) and shows in ``LoopLag``.

    Installed for a ``with`` block around every ``asyncio`` handle (``Handle._run``, the one
    place the loop runs a callback or a task step, as aiodebug's slow-callback logger does);
    for tests and benches, never in a serving bot."""

    def __init__(self) -> None:
        self.max_s = 0.0
        self.callbacks = 0
        #: the worst callback, as ``repr`` names it (coroutine and line)
        self.worst = ""
        self._original: Callable[[asyncio.Handle], None] | None = None

    def reset(self) -> None:
        self.max_s, self.callbacks, self.worst = 0.0, 0, ""

    def __enter__(self) -> CallbackCpu:
        original: Callable[[asyncio.Handle], None] = asyncio.Handle._run
        self._original = original
        clock = time.thread_time

        def timed(handle: asyncio.Handle) -> None:
            start = clock()
            try:
                original(handle)
            finally:
                spent = clock() - start
                self.callbacks += 1
                if spent > self.max_s:
                    self.max_s, self.worst = spent, repr(handle)[:300]

        setattr(asyncio.Handle, "_run", timed)  # noqa: B010 - a private method, on purpose
        return self

    def __exit__(self, *exc: object) -> None:
        if self._original is not None:
            setattr(asyncio.Handle, "_run", self._original)  # noqa: B010
            self._original = None


class GcPauses:
    """The garbage collector's runs in this process, on any thread, longest first: a run
    holds the interpreter lock from start to end, so the event loop waits out one run on
    another thread whole (a full collection walks every tracked object).

    ``max_cpu_s`` is the CPU the collecting thread spent in its longest run
    (``time.thread_time()``, which other processes' load does not inflate), ``max_wall_s``
    the longest run by the wall clock, ``worst`` where it ran ("thread, generation N").
    Installed for a ``with`` block (``gc.callbacks``); for tests and benches."""

    def __init__(self) -> None:
        self.max_cpu_s = self.max_wall_s = 0.0
        self.runs = 0
        self.worst = ""
        self._started: dict[int, tuple[float, float]] = {}

    def reset(self) -> None:
        self.max_cpu_s = self.max_wall_s = 0.0
        self.runs, self.worst = 0, ""

    def _observe(self, phase: str, info: dict[str, int]) -> None:
        me = threading.get_ident()
        if phase == "start":
            self._started[me] = (time.thread_time(), time.perf_counter())
            return
        began = self._started.pop(me, None)
        if began is None:
            return
        cpu, wall = time.thread_time() - began[0], time.perf_counter() - began[1]
        self.runs += 1
        self.max_wall_s = max(self.max_wall_s, wall)
        if cpu > self.max_cpu_s:
            generation = info.get("generation")
            self.max_cpu_s = cpu
            self.worst = f"{threading.current_thread().name}, generation {generation}"

    def __enter__(self) -> GcPauses:
        gc.callbacks.append(self._observe)
        return self

    def __exit__(self, *exc: object) -> None:
        if self._observe in gc.callbacks:
            gc.callbacks.remove(self._observe)
