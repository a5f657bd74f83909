"""The Slack stand-in: Web API server, signed-request driver and browser console.

Public API: :class:`SlackSim` (see ``sim.py``), :class:`DriverResult`, :class:`SignOptions`.
"""

from gpunode_sandbox.slacksim.driver import DriverResult, SignOptions
from gpunode_sandbox.slacksim.sim import SlackSim

__all__ = ["DriverResult", "SignOptions", "SlackSim"]
