"""Progress of the diagnostic Job on stderr, one line redrawn in place: "waiting for the
image… 12 s". Shown only on a terminal (``stderr.isatty()``) and without ``--quiet``: a
script that captures stderr, or a pipe, gets nothing but errors.

The gateway reports phases through ``bot.kube.jobs.PROGRESS`` from its threads; a ticker
thread redraws the line each second so the seconds count while nothing changes.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from types import TracebackType
from typing import TextIO

from bot.render.cli_text import line

#: seconds between redraws of the same phase (the counter's resolution)
TICK_S = 1.0
CLEAR = "\r\x1b[K"  # carriage return, erase to the end of the line


class Progress:
    """``with Progress(sys.stderr, enabled=...) as p: ... p.phase("pulling")``."""

    def __init__(
        self,
        stream: TextIO,
        *,
        enabled: bool,
        locale: str,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._stream = stream
        self.enabled = enabled
        self._locale = locale
        self._clock = clock
        self._lock = threading.Lock()
        self._phase: str | None = None
        self._since = 0.0
        self._done = threading.Event()
        self._ticker: threading.Thread | None = None

    @classmethod
    def for_terminal(cls, stream: TextIO, *, quiet: bool, locale: str) -> Progress:
        """Enabled when ``stream`` is a terminal and ``--quiet`` was not given."""
        isatty = getattr(stream, "isatty", None)
        return cls(stream, enabled=not quiet and bool(isatty and isatty()), locale=locale)

    def phase(self, phase: str) -> None:
        """The Job is now in ``phase`` (a repeat keeps the phase's start time)."""
        if not self.enabled:
            return
        with self._lock:
            if phase != self._phase:
                self._phase, self._since = phase, self._clock()
            self._draw()

    def _draw(self) -> None:
        if self._phase is None:
            return
        seconds = int(self._clock() - self._since)
        text = line("progress", self._phase, seconds, locale=self._locale)
        self._stream.write(f"{CLEAR}{text}")
        self._stream.flush()

    def _tick(self) -> None:
        while not self._done.wait(TICK_S):
            with self._lock:
                self._draw()

    def __enter__(self) -> Progress:
        if self.enabled:
            self._ticker = threading.Thread(target=self._tick, name="gpunode-progress", daemon=True)
            self._ticker.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._done.set()
        if self._ticker is not None:
            self._ticker.join()
        if self.enabled and self._phase is not None:
            with self._lock:
                self._stream.write(CLEAR)  # the result (or the error) starts on a clean line
                self._stream.flush()
