"""``WorkerProcess``: run module-level functions in a Python process of their own.

A thread cannot keep the event loop free from CPU-bound work: it holds the interpreter lock
while it runs (the loop gets it back between its 5 ms slices at best, and on a loaded
machine it waited 65-380 ms, issue #25). A worker process computes without that lock, on
another core.

The worker is ``python -m bot.offloading`` (or ``python -m MODULE`` for a module whose main
calls ``serve``), fed length-prefixed pickles of ``(fn, arg)`` on its stdin and answering
``(ok, result or exception)`` on its stdout, in order. Not a ``multiprocessing`` child: those
first import the parent's main script again (``gpunode serve``'s console script, so
``bot.cli`` and all it imports); this worker imports only the modules of the functions it is
sent. A worker that exits fails the calls in flight with ``WorkerExitedError``; its owner
decides what then: ``bot.kube.decoding.PageDecoder`` starts another for the next page;
``Offloader`` (a long-running bot's analyses and charts) computes that call on a thread and
the next in a new process. No I/O here but the pipes.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import gc
import importlib
import logging
import os
import pickle
import queue
import struct
import subprocess
import sys
import threading
import time
from collections import deque
from collections.abc import AsyncIterator, Callable
from concurrent.futures import Future
from dataclasses import dataclass
from typing import IO, Any, ParamSpec, TypeVar

log = logging.getLogger(__name__)
T = TypeVar("T")
A = TypeVar("A")
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
_SIZE = struct.Struct("<Q")


class WorkerExitedError(RuntimeError):
    """The worker process ended before it answered."""


def _read_message(stream: IO[bytes]) -> Any:
    head = stream.read(_SIZE.size)
    if len(head) < _SIZE.size:
        raise EOFError
    (size,) = _SIZE.unpack(head)
    data = stream.read(size)
    if len(data) < size:
        raise EOFError

    return pickle.loads(data)  # noqa: S301


def _write_message(stream: IO[bytes], message: object) -> None:
    data = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
    stream.write(_SIZE.pack(len(data)))
    stream.write(data)
    stream.flush()


@dataclass(frozen=True)
class Named:
    """A module-level function by its import path (``"package.module:function"``), imported
    where it is called: sent to a worker, it keeps its module (matplotlib's, for charts) out
    of the process that sends it."""

    path: str

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        module, _, name = self.path.partition(":")
        return getattr(importlib.import_module(module), name)(*args, **kwargs)


def call(job: Callable[[], T]) -> T:
    """``job()``: submit ``(call, functools.partial(fn, *args, **kwargs))`` to run a function
    of several arguments."""
    return job()


def serve(source: IO[bytes], sink: IO[bytes], *, collect_garbage: bool = True) -> None:
    """The worker's loop: each ``(fn, arg)`` answered ``(True, fn(arg))`` or
    ``(False, exception)``, until ``source`` ends. ``collect_garbage=False``: the cyclic
    collector off, for work that makes no cycles (decoding JSON)."""
    if not collect_garbage:
        gc.disable()
    while True:
        try:
            fn, arg = _read_message(source)
        except EOFError:
            return
        try:
            answer: tuple[bool, object] = (True, fn(arg))
        except Exception as exc:
            answer = (False, exc)
        del fn, arg
        try:
            _write_message(sink, answer)
        except Exception as exc:  # an answer (or its exception) that does not pickle
            _write_message(sink, (False, RuntimeError(f"unpicklable answer: {exc!r}")))


def serve_stdio(*, collect_garbage: bool = True) -> None:
    """``serve`` on this process's stdin and stdout: a worker's main. The answers go out on
    a copy of stdout; anything the functions print lands on stderr instead."""
    answers = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    serve(sys.stdin.buffer, answers, collect_garbage=collect_garbage)


class WorkerProcess:
    """One ``python -m MODULE`` process; a thread writes what is submitted (a submit never
    waits for the worker to be free), another resolves the futures in order. ``alive`` turns
    False when the process ends (or ``close``); a dead worker fails what is submitted."""

    def __init__(self, module: str = "bot.offloading", *, name: str = "worker") -> None:
        # this process's import path, as multiprocessing hands it to a child: the worker
        # imports the same bot as we do, not another one installed beside it
        path = os.pathsep.join(entry or os.getcwd() for entry in sys.path)
        self.proc = subprocess.Popen(
            [sys.executable, "-m", module],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env={**os.environ, "PYTHONPATH": path},
        )
        self.pid = self.proc.pid
        self.name = name
        self.alive = True
        self._lock = threading.Lock()
        self._pending: deque[Future[Any]] = deque()
        self._outbox: queue.SimpleQueue[tuple[Callable[[Any], Any], Any] | None] = (
            queue.SimpleQueue()
        )
        self._threads = [
            threading.Thread(target=target, name=f"gpunode-{name}-{role}", daemon=True)
            for target, role in ((self._write, "writer"), (self._read, "reader"))
        ]
        for thread in self._threads:
            thread.start()

    def submit(self, fn: Callable[[A], T], arg: A) -> Future[T]:
        """``fn(arg)`` in the worker: ``fn`` a module-level function (or a partial of one),
        ``arg`` and the result picklable."""
        future: Future[T] = Future()
        with self._lock:
            if not self.alive:
                future.set_exception(WorkerExitedError(f"the {self.name} process had exited"))
                return future
            self._pending.append(future)
            self._outbox.put((fn, arg))
        return future

    def _write(self) -> None:
        stdin = self.proc.stdin
        assert stdin is not None
        try:
            while (item := self._outbox.get()) is not None:
                _write_message(stdin, item)
                del item
        except (OSError, ValueError):
            pass  # the worker is gone: the reader fails what is pending
        finally:
            with contextlib.suppress(OSError):
                stdin.close()

    def _read(self) -> None:
        stdout = self.proc.stdout
        assert stdout is not None
        try:
            while True:
                ok, value = _read_message(stdout)
                with self._lock:
                    future = self._pending.popleft()
                if future.set_running_or_notify_cancel():
                    if ok:
                        future.set_result(value)
                    else:
                        future.set_exception(value)
                del value, future
        except Exception as exc:  # EOF, a closed pipe, an answer that does not unpickle
            ended = exc
        finally:
            stdout.close()
        with self._lock:
            self.alive = False
            left = list(self._pending)
            self._pending.clear()
        self._outbox.put(None)  # the writer ends too
        if left:
            log.warning("the %s process ended (%s); %d calls failed", self.name, ended, len(left))
        for future in left:
            if future.set_running_or_notify_cancel():
                future.set_exception(WorkerExitedError(f"the {self.name} process ended: {ended!r}"))
        self._reap()

    def _reap(self) -> None:
        """Wait for the process to end (its input is closed): 30 s, then kill it."""
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()

    def close(self) -> None:
        with self._lock:
            self.alive = False
            for future in self._pending:
                future.cancel()
        self._outbox.put(None)
        self._reap()
        for thread in self._threads:  # they end with the process (its pipes closed)
            thread.join(timeout=30)


class WorkerSlot:
    """At most one ``WorkerProcess`` of ``module``, started when first wanted and again after
    one exits; once none can be started (``fallback`` says, in the log, where the work goes
    then) or after ``close``, ``live`` answers None for good and the owner does the work
    itself. Thread-safe."""

    def __init__(self, module: str, *, name: str, use_process: bool, fallback: str) -> None:
        self.module = module
        self.name = name
        self.fallback = fallback
        self.usable = use_process
        self._worker: WorkerProcess | None = None
        self._lock = threading.Lock()

    @property
    def pid(self) -> int | None:
        """The worker process's id, or None when none runs (none started yet, or it exited)."""
        worker = self._worker
        return worker.pid if worker is not None and worker.alive else None

    def live(self) -> WorkerProcess | None:
        """The running worker, started now if there is none; None where none may run."""
        with self._lock:
            if self.usable and (self._worker is None or not self._worker.alive):
                try:
                    self._worker = WorkerProcess(self.module, name=self.name)
                except OSError as exc:
                    log.warning("no %s process (%s); %s", self.name, exc, self.fallback)
                    self.usable = False
            return self._worker if self.usable else None

    def detach(self) -> WorkerProcess | None:
        """The worker, no longer this slot's (the next ``live`` starts another)."""
        with self._lock:
            worker, self._worker = self._worker, None
        return worker

    def close(self) -> None:
        """End the worker and start no other. Blocks until it ends."""
        with self._lock:
            worker, self._worker = self._worker, None
            self.usable = False
        if worker is not None:
            worker.close()


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
            "bot.offloading", name=name, use_process=process, fallback="its work runs on threads"
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


if __name__ == "__main__":
    serve_stdio()
