"""``PageDecoder``: decode and reduce list pages in a process of its own.

A thread cannot keep the event loop free here: ``json.loads`` of a 500-pod page (about 1 MB)
holds the interpreter lock for its whole run, 10 ms on an idle core and 65-380 ms measured on
a loaded 2-core machine (issue #25), and the loop waits that long. A worker process decodes
without that lock, on another core, while this process fetches the next page; it returns each
page reduced to a few slim records, so neither process ever holds the whole list.

One worker per cluster, started for the first page of ``INLINE_BYTES`` or more, its garbage
collector off (it only decodes JSON, which has no cycles, and frees each page before the
next). The worker is ``python -m bot.kube.decoding``, fed length-prefixed pickles of
``(fn, body)`` on its stdin and answering ``(ok, result or exception)`` on its stdout, in
order. Not a ``multiprocessing`` child: those first import the parent's main script again
(``gpunode serve``'s console script, so ``bot.cli`` and all it imports); this worker imports
only the modules of the functions it is sent (``bot.kube.tallying``'s, kept free of the
``kubernetes`` client: about 17 MiB less). A worker that exits fails the pages in flight and
the next page starts another. Where no process can be started, pages are decoded on the
calling thread with the collector paused, as before.
"""

from __future__ import annotations

import contextlib
import gc
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
from typing import IO, Any, TypeVar

from bot.kube.pages import gc_paused

log = logging.getLogger(__name__)
T = TypeVar("T")
#: pages smaller than this are decoded on the calling thread (gc paused): a 256 KiB page
#: decodes in a few ms, and a small cluster, or a one-shot `gpunode top` in the terminal,
#: never pays for starting the worker (seconds on a loaded machine)
INLINE_BYTES = 256 * 1024
_SIZE = struct.Struct("<Q")


class DecoderExitedError(RuntimeError):
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


def serve(source: IO[bytes], sink: IO[bytes]) -> None:
    """The worker's loop: each ``(fn, body)`` answered ``(True, fn(body))`` or
    ``(False, exception)``, until ``source`` ends."""
    gc.disable()
    while True:
        try:
            fn, body = _read_message(source)
        except EOFError:
            return
        try:
            answer: tuple[bool, object] = (True, fn(body))
        except Exception as exc:
            answer = (False, exc)
        del fn, body
        try:
            _write_message(sink, answer)
        except Exception as exc:  # an answer (or its exception) that does not pickle
            _write_message(sink, (False, RuntimeError(f"unpicklable answer: {exc!r}")))


class _Worker:
    """One ``python -m bot.kube.decoding`` process; a thread writes what is submitted (a
    submit never waits for the worker to be free), another resolves the futures in order."""

    def __init__(self) -> None:
        # this process's import path, as multiprocessing hands it to a child: the worker
        # imports the same bot as we do, not another one installed beside it
        path = os.pathsep.join(entry or os.getcwd() for entry in sys.path)
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "bot.kube.decoding"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env={**os.environ, "PYTHONPATH": path},
        )
        self.pid = self.proc.pid
        self.alive = True
        self._lock = threading.Lock()
        self._pending: deque[Future[Any]] = deque()
        self._outbox: queue.SimpleQueue[tuple[Callable[[bytes], Any], bytes] | None] = (
            queue.SimpleQueue()
        )
        self._threads = [
            threading.Thread(target=target, name=f"gpunode-decoder-{name}", daemon=True)
            for target, name in ((self._write, "writer"), (self._read, "reader"))
        ]
        for thread in self._threads:
            thread.start()

    def submit(self, fn: Callable[[bytes], T], body: bytes) -> Future[T]:
        future: Future[T] = Future()
        with self._lock:
            if not self.alive:
                future.set_exception(DecoderExitedError("the decoder process had exited"))
                return future
            self._pending.append(future)
            self._outbox.put((fn, body))
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
            log.warning("the decoder process ended (%s); %d pages failed", ended, len(left))
        for future in left:
            if future.set_running_or_notify_cancel():
                future.set_exception(DecoderExitedError(f"the decoder process ended: {ended!r}"))
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


class PageDecoder:
    def __init__(self, *, use_process: bool = True) -> None:
        self._use_process = use_process
        self._worker: _Worker | None = None
        self._lock = threading.Lock()

    @property
    def pid(self) -> int | None:
        """The worker process's id, or None when none was started (or it exited)."""
        worker = self._worker
        return worker.pid if worker is not None and worker.alive else None

    def _live_worker(self) -> _Worker | None:
        with self._lock:
            if self._use_process and (self._worker is None or not self._worker.alive):
                try:
                    self._worker = _Worker()
                except OSError as exc:
                    log.warning("no decoder process (%s); list pages are decoded here", exc)
                    self._use_process = False
            return self._worker if self._use_process else None

    def submit(
        self, fn: Callable[[bytes], T], body: bytes, *, process: bool | None = None
    ) -> Future[T]:
        """``fn(body)`` in the worker (``fn`` must be a module-level function or a partial
        of one), or here for a small page; ``process=True``: in the worker whatever the
        size (the pieces of one streamed answer all go where its state is kept)."""
        wanted = len(body) >= INLINE_BYTES if process is None else process
        worker = self._live_worker() if wanted else None
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
        with self._lock:
            worker, self._worker = self._worker, None
            self._use_process = False
        if worker is not None:
            worker.close()


if __name__ == "__main__":
    # the answers go out on a copy of stdout; anything printed lands on stderr instead
    answers = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    serve(sys.stdin.buffer, answers)
