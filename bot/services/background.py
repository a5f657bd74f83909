"""Tracks work started after an acknowledgement, so shutdown and tests can wait for it.

Failures are logged with their traceback once, counted (``failures``), and the newest
``KEEP_ERRORS`` kept without their tracebacks: a traceback holds every frame's locals alive
(measured: 4 MB per 1,000 failures), and a bot that fails on every request for a week must
not grow without bound.
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import Coroutine
from typing import Any

log = logging.getLogger(__name__)

KEEP_ERRORS = 100  # enough to see a pattern; each is small once its traceback is dropped


class Background:
    def __init__(self) -> None:
        self._tasks: set[asyncio.Task[Any]] = set()
        self._errors: deque[BaseException] = deque(maxlen=KEEP_ERRORS)
        #: how many tasks have failed since start
        self.failures = 0

    def spawn(self, coro: Coroutine[Any, Any, Any], *, name: str = "gpunode") -> None:
        task = asyncio.get_running_loop().create_task(coro, name=name)
        self._tasks.add(task)
        task.add_done_callback(self._done)

    def _done(self, task: asyncio.Task[Any]) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and (exc := task.exception()) is not None:
            self.failures += 1
            log.error("background task %s failed", task.get_name(), exc_info=exc)
            self._errors.append(_without_tracebacks(exc))

    @property
    def errors(self) -> list[BaseException]:
        """The newest ``KEEP_ERRORS`` exceptions of failed tasks (newest last), tracebacks
        dropped, so tests and health checks can see them."""
        return list(self._errors)

    @property
    def busy(self) -> int:
        return len(self._tasks)

    async def drain(self, timeout_s: float = 60.0) -> None:
        """Wait until no task is running (new tasks spawned meanwhile are waited for too)."""
        async with asyncio.timeout(timeout_s):
            while self._tasks:
                await asyncio.gather(*list(self._tasks), return_exceptions=True)


def _without_tracebacks(exc: BaseException) -> BaseException:
    """``exc`` with its traceback, and those of the exceptions it chains, dropped."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        current.__traceback__ = None
        current = current.__cause__ or current.__context__
    return exc
