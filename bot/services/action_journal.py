"""What the action flow records, in one cluster: audit rows and incident timeline entries,
written through the store port (the repository side of the flow; ``ActionMessages`` is what
it tells people).

Audit rule: every click that is refused is audited too (who tried what, and why not), not
only the ones that changed something; the audit log answers "who tried to do what, when".
Every decision of the flow goes through ``ActionJournal.audit``, so it is also the one place
that counts them (``gpunode_actions_total``).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from bot.core.model.incidents import TimelineKind
from bot.core.reporting.records import AuditRecord
from bot.services.ports import ActionMetrics, StorePort
from bot.services.recording import append_entry

#: an action's audit ``action`` column: ``tier3.execute``
_ACTION = re.compile(r"tier(?P<tier>[0-9])\.(?P<step>[a-z_]+)")


@dataclass(frozen=True)
class ActionJournal:
    """The audit log and the timelines, as the flow acting in ``cluster`` writes them."""

    store: StorePort
    metrics: ActionMetrics
    clock: Callable[[], datetime]
    #: the cluster acted on: an audit row that names none is this cluster's
    cluster: str

    async def audit(self, **fields: Any) -> None:
        """Append an audit row; a row about an action (``tier<N>.<step>``) is also counted
        in ``gpunode_actions_total`` by tier, step and decision."""
        fields.setdefault("cluster", self.cluster)
        await self.store.append_audit(AuditRecord(at=self.clock(), **fields))
        if m := _ACTION.fullmatch(str(fields.get("action", ""))):
            self.metrics.action(
                tier=m["tier"], step=m["step"], outcome=str(fields.get("decision", ""))
            )

    async def timeline(
        self,
        incident_id: str | None,
        kind: TimelineKind,
        actor: str,
        text: str,
        data: dict[str, Any] | None = None,
    ) -> None:
        """Append one entry to the incident's timeline (none: an action without one)."""
        if incident_id is None:
            return
        await append_entry(self.store, incident_id, kind, actor, text, at=self.clock(), data=data)
