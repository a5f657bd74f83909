"""``settle_heap``: move everything alive after start-up out of the collector's sight, and
collect the young generation less often.

A full (generation 2) collection walks every tracked object: the imported modules, the
Kubernetes client's and pydantic's classes, the templates, a few hundred thousand objects
that live as long as the process. On a busy 2-core machine one such walk measured 0.25-0.44 s
during a large ``top`` (issue #25), and it runs on whichever thread allocates, the event loop
included. ``gc.freeze()`` puts them in a permanent generation that collections skip (the
technique CPython documents for long-lived servers); what is allocated later is still
collected as usual.

The young generation is collected every ``YOUNG_THRESHOLD`` allocations instead of
CPython's 700. Parsing a 5,000-process evidence bundle, analysing and rendering it
(bench/analyze.py) made 24 young and 2 middle collections per diagnosis at 700, and a full
one now and then: 5-8 ms of the collector's time (counted with ``gc.callbacks``) in a
diagnosis of about 50 ms of CPU; at 50,000 none. Those collections also ran on the event loop
whenever a slash command's allocations crossed the line. Reference counting frees almost
everything anyway; the threshold only says how many objects may pile up before garbage
cycles are looked for, so a cycle waits longer (at most 50,000 objects' worth).

The C heap under Python's objects is glibc's: ``tune_malloc`` gives the bot's process the
allocator settings its workers start with (``bot.working.MALLOC_ENV``: large blocks mapped on
their own, two arenas), and ``settle_heap`` ends by handing start-up's freed pages back
(``trim_heap``). Both count in the bot's resident memory (issue #25's 300 MiB).
"""

from __future__ import annotations

import ctypes
import gc
import os

from bot.working import MALLOC_ENV

#: allocations (less deallocations) of tracked objects between young collections
YOUNG_THRESHOLD = 50_000


def settle_heap() -> None:
    """Collect once, then freeze what survived, and collect the young generation every
    ``YOUNG_THRESHOLD`` allocations (the older ones as CPython does: every 10 younger
    collections), and hand the C heap's free pages back. Call after start-up, before
    traffic."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(YOUNG_THRESHOLD, 10, 10)
    trim_heap()


#: mallopt's parameters (glibc's malloc.h) for ``MALLOC_ENV``'s variables
_MALLOPT = {"MALLOC_TRIM_THRESHOLD_": -1, "MALLOC_MMAP_THRESHOLD_": -3, "MALLOC_ARENA_MAX": -8}


def tune_malloc() -> bool:
    """Set this process's allocator as its workers' (``bot.working.MALLOC_ENV``, where an
    operator's environment does not set them: glibc read those at start-up). Call first
    thing, before any thread allocates. False where the C library is not glibc (nothing
    set)."""
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return False
    for name, value in MALLOC_ENV.items():
        if name not in os.environ and not mallopt(_MALLOPT[name], int(value)):
            return False
    return True


def trim_heap() -> bool:
    """Hand the C heap's free pages back (glibc's ``malloc_trim``): what start-up freed (the
    templates' compilation: its parse trees and generated source) stays resident otherwise,
    ~5 MiB at 5,000 nodes, measured. False where the C library is not glibc."""
    try:
        trim = ctypes.CDLL(None).malloc_trim
    except (OSError, AttributeError):
        return False
    trim(0)
    return True
