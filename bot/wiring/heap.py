"""``settle_heap``: move everything alive after start-up out of the collector's sight.

A full (generation 2) collection walks every tracked object: the imported modules, the
Kubernetes client's and pydantic's classes, the templates, a few hundred thousand objects
that live as long as the process. On a busy 2-core machine one such walk measured 0.25-0.44 s
during a large ``top`` (issue #25), and it runs on whichever thread allocates, the event loop
included. ``gc.freeze()`` puts them in a permanent generation that collections skip (the
technique CPython documents for long-lived servers); what is allocated later is still
collected as usual.
"""

from __future__ import annotations

import gc


def settle_heap() -> None:
    """Collect once, then freeze what survived. Call after start-up, before traffic."""
    gc.collect()
    gc.freeze()
