"""Runs on the node, inside the diagnostic Job: reads /proc, cgroups and NVML from a host root.

Contract: imports only the standard library, pydantic, ``bot.core`` and ``bot.errors``
(``pynvml`` lazily, in ``nvml.py`` only). Never raises on partial evidence: every unreadable
source becomes a ``Gap`` in the bundle.
"""
