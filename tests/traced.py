"""What a call allocates, by ``tracemalloc``: its peak, or what it leaves held.

For the memory tests of issue #25 (the bot's RSS budget): a figure the interpreter counts
itself, unlike RSS, so it is the same on a busy machine."""

from __future__ import annotations

import tracemalloc
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def peak_of(call: Callable[[], T]) -> tuple[T, int]:
    """``call()``'s result and the most bytes it held at once while it ran."""
    tracemalloc.start()
    try:
        result = call()
        return result, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def held_by(call: Callable[[], T]) -> tuple[T, int]:
    """``call()``'s result and the bytes it left allocated (what keeping the result costs),
    from snapshots taken before and after it."""
    tracemalloc.start()
    try:
        before = tracemalloc.take_snapshot()
        result = call()
        after = tracemalloc.take_snapshot()
    finally:
        tracemalloc.stop()
    return result, sum(s.size_diff for s in after.compare_to(before, "filename"))
