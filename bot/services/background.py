"""Tracks work started after an acknowledgement, so shutdown and tests can wait for it."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Coroutine
from typing import Any

log = logging.getLogger(__name__)


class Background:
    def __init__(self) -> None:
        self._tasks: set[asyncio.Task[Any]] = set()
        #: exceptions of finished tasks (newest last), so tests and health checks can see them
        self.errors: list[BaseException] = []

    def spawn(self, coro: Coroutine[Any, Any, Any], *, name: str = "gpunode") -> None:
        task = asyncio.get_running_loop().create_task(coro, name=name)
        self._tasks.add(task)
        task.add_done_callback(self._done)

    def _done(self, task: asyncio.Task[Any]) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and (exc := task.exception()) is not None:
            self.errors.append(exc)
            log.error("background task %s failed", task.get_name(), exc_info=exc)

    @property
    def busy(self) -> int:
        return len(self._tasks)

    async def drain(self, timeout_s: float = 60.0) -> None:
        """Wait until no task is running (new tasks spawned meanwhile are waited for too)."""
        async with asyncio.timeout(timeout_s):
            while self._tasks:
                await asyncio.gather(*list(self._tasks), return_exceptions=True)
