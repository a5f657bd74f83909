"""The timeline export into chat: an incident's postmortem draft (charts, Markdown and a
self-contained HTML page) uploaded to its thread, and noted in its timeline.

The terminal's ``gpunode timeline`` prints the same draft (``bot.cli.ops``)."""

from __future__ import annotations

from bot.services.chatops import BotServices
from bot.services.recording import append_entry


async def upload_timeline(
    s: BotServices, incident_ref: str | None, *, channel: str, user: str, thread_ts: str | None
) -> None:
    """The postmortem draft of ``incident_ref`` (else of the incident whose thread
    ``thread_ts`` is) uploaded to the incident's thread; UsageError if there is none."""
    from bot.services.postmortem import draft_postmortem

    incident = await s.ops.resolve_id(incident_ref, channel=channel, thread_ts=thread_ts)
    # several clusters: the incident's cluster by its name; one: as the gateway names it
    port = s.clusters.port(incident.cluster or s.clusters.default)
    cluster = (
        incident.cluster
        if s.clusters.multi
        else str(getattr(port, "cluster_name", "") or incident.cluster)
    )
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
        data={"files": names},
    )
