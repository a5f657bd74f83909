"""Loopback ports for tests, free of the race of a port "found free" and then used.

A port that was bound and released can be taken by any other process (another test's server,
a client's ephemeral port) before the test uses it. Under load, with the suite's workers side
by side, that happens. So:

- a test that needs a port nobody answers on holds it with ``refusing_port``: bound, never
  listening, so a connection is refused and no other process can take it meanwhile;
- a program that binds its own port is started on port 0 when it can name the port it got
  (``gpunode serve``, ``gpunode agent``, the stand-ins), and otherwise on ``free_port`` with
  another try when it says the address was in use (PostgreSQL, Prometheus, Alertmanager).
"""

from __future__ import annotations

import contextlib
import socket
from collections.abc import Iterator


@contextlib.contextmanager
def refusing_port() -> Iterator[int]:
    """A loopback TCP port that refuses every connection while the block runs: bound, so no
    other process can take it, but not listening, so the kernel answers a SYN with a reset."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as held:
        held.bind(("127.0.0.1", 0))
        yield int(held.getsockname()[1])


def free_port() -> int:
    """A loopback port free a moment ago, for a program that binds it itself and cannot be
    given port 0: the caller tries again with another when the program says it was taken."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])
