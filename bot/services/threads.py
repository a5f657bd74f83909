"""What people write in an incident thread: replies go into the timeline, and a mention of
gpunode (``@gpunode diagnose``, ``@gpunode timeline``...) is a command asked there.

Chat platforms redeliver events: each ``event_id`` is handled once (``remember_event``).
Messages outside an incident thread are ignored. The chat surface passes plain text (Slack's
escaping already undone).
"""

from __future__ import annotations

from bot.core.model.incidents import Incident
from bot.services.chatops import BotServices
from bot.services.recording import append_entry


async def note_reply(
    s: BotServices, *, event_id: str, channel: str, thread_ts: str, user: str, text: str, ts: str
) -> None:
    """A person's reply in an incident thread goes into the timeline, once per event."""
    if not await s.store.remember_event(f"event:{event_id}", at=s.clock()):
        return
    incident = await s.store.find_incident_by_thread(channel, thread_ts)
    if incident is None:
        return
    await append_entry(s.store, incident.id, "message", user, text, at=s.clock(), data={"ts": ts})


async def mentioned_in(
    s: BotServices, *, event_id: str, channel: str, thread_ts: str | None
) -> Incident | None:
    """The incident whose thread gpunode was mentioned in, once per event; None when the
    event was seen already or the mention is not in an incident thread (then it is left
    alone). The surface parses the mention with the one grammar
    (``bot.core.governance.commands.parse_in_thread``) and hands it to ``bot.services.commands``."""
    if not await s.store.remember_event(f"event:{event_id}", at=s.clock()):
        return None
    if not thread_ts:
        return None
    found: Incident | None = await s.store.find_incident_by_thread(channel, thread_ts)
    return found
