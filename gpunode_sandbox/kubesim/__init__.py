"""The Kubernetes API stand-in: the real REST protocol on a loopback port, from a scenario.

Public API: :class:`KubeSim` (``start``/``stop``/``running_in_thread``, ``get``/``list``,
``faults``, ``requests``), :func:`load_scenario`, :func:`list_scenarios`, :class:`Scenario`.

The names are imported on first use (PEP 562): the collector of every diagnostic Job of a pod
that is not privileged starts as ``python -m gpunode_sandbox.kubesim.devcgroup bot collect``,
which imports this package first, and the API server's modules (CEL, aiohttp, the scenarios)
would add seconds to each start on a busy machine.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from gpunode_sandbox.kubesim.scenarios import Scenario, list_scenarios, load_scenario
    from gpunode_sandbox.kubesim.sim import KubeSim

__all__ = ["KubeSim", "Scenario", "list_scenarios", "load_scenario"]


def __getattr__(name: str) -> Any:
    if name == "KubeSim":
        from gpunode_sandbox.kubesim.sim import KubeSim

        return KubeSim
    if name in ("Scenario", "list_scenarios", "load_scenario"):
        from gpunode_sandbox.kubesim import scenarios

        return getattr(scenarios, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
