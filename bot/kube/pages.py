"""What cutting a list page needs, free of the ``kubernetes`` client.

The decoder process (``bot.kube.decoding``) imports the module of each function it runs
(``bot.kube.tallying``) and so everything that module imports; kept apart from
``kubernetes`` (about 17 MiB of resident memory), it holds only what it runs. Here: the
collector pause (``gc_paused``), a page cut to slim records (``SlimPage``), the ``continue``
token read ahead of the decode (``list_token``) and the metrics API group.
"""

from __future__ import annotations

import gc
import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Generic, NamedTuple, TypeVar

R = TypeVar("R")
METRICS_GROUP = "metrics.k8s.io"


class _GcPause:
    """Counted pause of the cyclic garbage collector, shared by the threads decoding at once.

    Decoding a 500-pod page allocates ~10^5 containers; each 700 allocations trigger a
    young collection and, with a large heap, full ones that scan everything (60-65% of a
    fleet read's time in issue #25's profile). JSON holds no cycles, so nothing is lost by
    collecting after the decode instead of during it."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._depth = 0
        self._was_enabled = False

    @contextmanager
    def __call__(self) -> Iterator[None]:
        with self._lock:
            if self._depth == 0:
                self._was_enabled = gc.isenabled()
                gc.disable()
            self._depth += 1
        try:
            yield
        finally:
            with self._lock:
                self._depth -= 1
                if self._depth == 0 and self._was_enabled:
                    gc.enable()


gc_paused = _GcPause()


class SlimPage(NamedTuple, Generic[R]):
    """One list page cut to slim records (by a ``pages`` function, in the decoder)."""

    token: str | None
    resource_version: str
    #: (namespace, name, slim record)
    items: list[tuple[str, str, R]]


def list_token(body: bytes) -> tuple[bool, str | None]:
    """(found, the ``continue`` token) read from the list's metadata without decoding the
    items: the API server writes ``metadata`` before ``items`` (Go's field order). Not found
    when the body is shaped otherwise; the caller then waits for the full decode."""
    head = body[:4096]
    at, items = head.find(b'"metadata"'), head.find(b'"items"')
    if at < 0 or (0 <= items < at):
        return False, None
    start = head.find(b"{", at)
    if start < 0:
        return False, None
    try:
        meta, _ = json.JSONDecoder().raw_decode(
            body[start : start + 65536].decode("utf-8", "replace")
        )
    except ValueError:
        return False, None
    return True, (meta.get("continue") if isinstance(meta, dict) else None) or None
