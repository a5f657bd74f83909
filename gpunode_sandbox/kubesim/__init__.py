"""The Kubernetes API stand-in: the real REST protocol on a loopback port, from a scenario.

Public API: :class:`KubeSim` (``start``/``stop``/``running_in_thread``, ``get``/``list``,
``faults``, ``requests``), :func:`load_scenario`, :func:`list_scenarios`, :class:`Scenario`.
"""

from __future__ import annotations

from gpunode_sandbox.kubesim.scenarios import Scenario, list_scenarios, load_scenario
from gpunode_sandbox.kubesim.sim import KubeSim

__all__ = ["KubeSim", "Scenario", "list_scenarios", "load_scenario"]
