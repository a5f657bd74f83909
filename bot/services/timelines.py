"""The timeline export into chat: an incident's postmortem draft (charts, Markdown and a
self-contained HTML page) uploaded to its thread, and noted in its timeline.

The terminal's ``gpunode timeline`` prints the same draft (``bot.cli.ops``)."""

from __future__ import annotations

from bot.core.model.incidents import Incident, said
from bot.services.chatops import BotServices
from bot.services.clusters import incident_at
from bot.services.recording import append_entry


async def upload_timeline(s: BotServices, incident: Incident, *, user: str) -> None:
    """The postmortem draft of ``incident`` uploaded to its thread (``user`` asked for it)."""
    from bot.services.postmortem import draft_postmortem

    # several clusters: the incident's cluster by its name; one: as the gateway names it
    at = incident_at(s.clusters, incident)
    named = s.clusters.port(at.cluster).cluster_name or incident.cluster
    cluster = at.cluster if s.clusters.multi else named
    draft = await draft_postmortem(
        s.store, s.chat.user_name, incident, cluster=cluster, now=s.clock()
    )
    # drawn and worded in the thread's own language by the surface's presenter
    names = await s.files.postmortem(incident, draft.postmortem, draft.charts)
    await append_entry(
        s.store,
        incident.id,
        "note",
        user,
        "postmortem draft exported",
        at=s.clock(),
        data={"files": names} | said("postmortem_exported"),
    )
