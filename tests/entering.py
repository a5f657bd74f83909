"""``entered(*fns)``: which threads of this process called ``fn`` while inside; the tests that
prove work runs in a worker process (``bot.working``) check that none did."""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import FrameType
from typing import Any


@contextmanager
def entered(*fns: Callable[..., Any]) -> Iterator[list[str]]:
    """The names of the threads that entered any of ``fns`` while inside (this one, and the
    threads started inside: ``asyncio.to_thread``'s pool starts with the test's event loop)."""
    codes = {fn.__code__ for fn in fns}
    names: list[str] = []

    def profile(frame: FrameType, event: str, arg: object) -> None:
        if event == "call" and frame.f_code in codes:
            names.append(threading.current_thread().name)

    threading.setprofile(profile)  # type: ignore[arg-type]
    sys.setprofile(profile)  # type: ignore[arg-type]
    try:
        yield names
    finally:
        sys.setprofile(None)
        threading.setprofile(None)  # type: ignore[arg-type]


def hang_unless_in(pid: int) -> int:
    """This process's id, at once in process ``pid``; anywhere else after an hour (a worker
    process that is stuck)."""
    if os.getpid() != pid:
        time.sleep(3600)
    return os.getpid()


def imported(name: str) -> bool:
    """Whether module ``name`` is imported in the process this runs in."""
    return name in sys.modules


def imported_of(names: bytes) -> list[str]:
    """Which of ``names`` (module names, one a line: a page as the decoder is sent one) are
    imported in the process this runs in."""
    return [name for name in names.decode().split() if name in sys.modules]
