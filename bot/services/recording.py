"""Writing an incident's timeline: one entry, stamped and appended through the store port.

Every use-case that records something on an incident (a diagnosis requested, an approval, an
action's result, an alert resolved, a message in the thread) goes through ``append_entry``,
so each entry is built the same way: the time is the caller's clock (the store never reads
one), the data is copied, and the kind is one of ``TimelineKind``.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime

from bot.core.model.incidents import TimelineEntry, TimelineKind
from bot.services.ports import StorePort


async def append_entry(
    store: StorePort,
    incident_id: str,
    kind: TimelineKind,
    actor: str,
    text: str,
    *,
    at: datetime,
    data: Mapping[str, object] | None = None,
) -> TimelineEntry:
    """Append one entry to ``incident_id``'s timeline; returns it with its ``seq``."""
    entry = TimelineEntry(
        incident_id=incident_id, at=at, kind=kind, actor=actor, text=text, data=dict(data or {})
    )
    seq = await store.append_timeline(entry)
    return entry.model_copy(update={"seq": seq})
