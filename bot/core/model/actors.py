"""Who acted, when it was not a person. Pure: no I/O.

Timeline entries, audit rows and diagnose requests name their actor: a Slack user id for a
person, or one of these for the machines. Templates branch on them through the ``actors``
global (``bot.render.environment``), never on a string spelled out again.
"""

from __future__ import annotations

from typing import Final

#: gpunode itself: a re-diagnosis after an action, an approval expiring, a restart's cleanup
GPUNODE: Final = "gpunode"
#: an Alertmanager webhook: an alert opened or joined the incident, or resolved
ALERTMANAGER: Final = "alertmanager"
#: the machines, whose display name is their own (no user lookup, no mention)
MACHINES: Final = frozenset({GPUNODE, ALERTMANAGER})
#: a request whose user could not be read (a payload without one)
UNKNOWN: Final = "unknown"
