"""What people write in an incident thread: replies go into the timeline, and a mention of
gpunode (``@gpunode diagnose|timeline``, else the incident's status) is answered there.

Chat platforms redeliver events: each ``event_id`` is handled once (``remember_event``).
Messages outside an incident thread are ignored. The chat surface passes plain text (Slack's
escaping already undone).
"""

from __future__ import annotations

from bot.core.outcomes import notice
from bot.services.chatops import BotServices, label, permitted
from bot.services.recording import append_entry
from bot.services.timelines import upload_timeline


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


async def mentioned(
    s: BotServices, *, event_id: str, channel: str, thread_ts: str | None, user: str, text: str
) -> None:
    """``@gpunode diagnose|timeline`` inside an incident thread; anything else: its status.
    Each needs its permission (``diagnose``, else ``view``)."""
    if not await s.store.remember_event(f"event:{event_id}", at=s.clock()):
        return
    incident = await s.store.find_incident_by_thread(channel, thread_ts) if thread_ts else None
    if incident is None:
        return
    words = text.lower().split()
    where = incident.cluster or None  # the incident's cluster: roles scoped elsewhere do not count
    if "diagnose" in words:
        if await permitted(
            s, "diagnose", user=user, channel=channel, thread_ts=thread_ts, cluster=where
        ):
            await s.diagnose.diagnose(incident.node, channel=channel, user=user, cluster=where)
    elif not await permitted(
        s, "view", user=user, channel=channel, thread_ts=thread_ts, cluster=where
    ):
        return
    elif "timeline" in words:
        await upload_timeline(s, incident.id, channel=channel, user=user, thread_ts=None)
    else:
        rows = [
            {
                "id": incident.id,
                "node": label(s, incident),
                "state": incident.state,
                "opened_at": str(incident.opened_at),
            }
        ]
        await s.thread.post(
            channel, notice("status_list", incidents=rows), incident=incident, thread_ts=thread_ts
        )
