"""``WorkerProcess``: run module-level functions in a Python process of their own.

A thread cannot keep the event loop free from CPU-bound work: it holds the interpreter lock
while it runs (the loop gets it back between its 5 ms slices at best, and on a loaded
machine it waited 65-380 ms, issue #25). A worker process computes without that lock, on
another core.

The worker is ``python -m bot.working`` (or ``python -m MODULE`` for a module whose main
calls ``serve``), fed length-prefixed pickles of ``(fn, arg)`` on its stdin and answering
``(ok, result or exception)`` on its stdout, in order. Not a ``multiprocessing`` child: those
first import the parent's main script again (``gpunode serve``'s console script, so
``bot.cli`` and all it imports); this worker imports only this module and the modules of the
functions it is sent. So this module imports no ``asyncio`` (nor, through it, ``ssl``): 6.7
MiB of resident memory in each worker, measured, that the bot's process tree would count
twice (issue #25's 300 MiB); the event loop's side, ``bot.offloading.Offloader``, lives
apart. A worker that exits fails the calls in flight with ``WorkerExitedError``; its owner
decides what then: ``bot.kube.decoding.PageDecoder`` starts another for the next page;
``Offloader`` (a long-running bot's analyses and charts) computes that call on a thread and
the next in a new process. No I/O here but the pipes.
"""

from __future__ import annotations

import contextlib
import fcntl
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
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass
from typing import IO, Any, TypeVar

log = logging.getLogger(__name__)
T = TypeVar("T")
A = TypeVar("A")
#: glibc's allocator settings for the bot's processes (its environment variables; a worker is
#: started with them, ``bot.wiring.heap.tune_malloc`` sets the same in the bot's own process,
#: and an operator's own values win). A list page (1 MB), its pickle and its decoded objects
#: come and go a page at a time: past glibc's default, whose threshold for mapping a block on
#: its own rises to the largest block freed, such blocks were carved from the heap and their
#: pages kept, and each thread that allocates gets an arena of its own (up to 8 a core).
#: Mapped apart from 128 KiB, trimmed from 128 KiB free, two arenas: measured 14 MiB less
#: resident in the bot's process at 5,000 nodes (issue #25's 300 MiB)
MALLOC_ENV = {
    "MALLOC_ARENA_MAX": "2",
    "MALLOC_MMAP_THRESHOLD_": str(128 * 1024),
    "MALLOC_TRIM_THRESHOLD_": str(128 * 1024),
}
#: the smallest ``bytes`` argument sent apart from its pickle (``_write_message``)
RAW_BYTES = 64 * 1024


class WorkerExitedError(RuntimeError):
    """The worker process ended before it answered."""


_FRAME = struct.Struct("<QQ")
#: an argument sent as it is, after the pickle, not inside it (``_write_message``)
_RAW = "raw"


def _read_message(stream: IO[bytes]) -> Any:
    head = stream.read(_FRAME.size)
    if len(head) < _FRAME.size:
        raise EOFError
    size, raw_size = _FRAME.unpack(head)
    data = stream.read(size)
    if len(data) < size:
        raise EOFError
    message = pickle.loads(data)  # noqa: S301
    if raw_size:
        raw = stream.read(raw_size)
        if len(raw) < raw_size:
            raise EOFError
        fn, _ = message
        return fn, raw
    return message


def _write_message(stream: IO[bytes], message: object) -> None:
    """``message`` pickled, length-prefixed. A ``(fn, bytes)`` call of 64 KiB or more sends
    its bytes after the pickle of ``(fn, _RAW)``, not pickled: a 3 MB list page is then
    written from the object it is (pickling copied it once here and once more in the
    worker's ``pickle.loads``: 0.24 s of the bot's interpreter lock over a 5,000-node
    fleet's pages, measured)."""
    raw = b""
    if type(message) is tuple and len(message) == 2:
        fn, arg = message
        if type(arg) is bytes and len(arg) >= RAW_BYTES:
            message, raw = (fn, _RAW), arg
    data = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
    stream.write(_FRAME.pack(len(data), len(raw)))
    stream.write(data)
    if raw:
        stream.write(raw)
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


#: a pipe's buffer, asked for at 1 MiB (Linux's default ceiling for anyone,
#: /proc/sys/fs/pipe-max-size) instead of 64 KiB: a 3 MB list page crosses in 3 turns of the
#: reader and the writer instead of 48, each a wake-up and a switch on a busy machine
PIPE_BYTES = 1 << 20


def _widen(*pipes: IO[bytes] | None) -> None:
    """Ask for ``PIPE_BYTES`` of buffer on each pipe (Linux); elsewhere, or refused, leave it."""
    for pipe in pipes:
        if pipe is not None and hasattr(fcntl, "F_SETPIPE_SZ"):
            with contextlib.suppress(OSError):
                fcntl.fcntl(pipe.fileno(), fcntl.F_SETPIPE_SZ, PIPE_BYTES)


class WorkerProcess:
    """One ``python -m MODULE`` process; a thread writes what is submitted (a submit never
    waits for the worker to be free), another resolves the futures in order. ``alive`` turns
    False when the process ends (or ``close``); a dead worker fails what is submitted."""

    def __init__(self, module: str = "bot.working", *, name: str = "worker") -> None:
        # this process's import path, as multiprocessing hands it to a child: the worker
        # imports the same bot as we do, not another one installed beside it
        path = os.pathsep.join(entry or os.getcwd() for entry in sys.path)
        self.proc = subprocess.Popen(
            [sys.executable, "-m", module],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env={**MALLOC_ENV, **os.environ, "PYTHONPATH": path},
        )
        self.pid = self.proc.pid
        self.name = name
        _widen(self.proc.stdin, self.proc.stdout)
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


if __name__ == "__main__":
    serve_stdio()
