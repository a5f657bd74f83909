"""The prevention kit use case: compute it for a node, and share it into Slack.

Two sources, one kit (``bot.core.remedies.prevention`` computes; the surface renders it: the Slack
presenter through ``FilesPort.kit``, the terminal through ``bot.render.prevention``):
- ``kit_from_cluster``: the node as the API server shows it now (``/gpunode prevent NODE``
  and ``gpunode prevent NODE``): no diagnostic Job is needed, since every value comes from
  the node's capacity and its pods' requests and limits;
- ``kit_from_incident``: the cluster view stored with the incident's latest diagnosis (the
  **Prevention kit** button under the evidence, and the postmortem export), so the kit
  matches the evidence the thread shows.
``share_kit`` hands the kit to the presenter, which posts the explanation (one line per
value) and uploads the files in one message, in the reader's language; in an incident thread
it also notes the share in the timeline.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime

from bot.core.model.cluster import ClusterView
from bot.core.model.clusters import NodeRef, format_node_ref
from bot.core.model.incidents import Incident, TimelineEntry, said
from bot.core.remedies.prevention import KitSource, PreventionParams, prevention_params
from bot.core.reporting.outcomes import notice
from bot.core.reporting.records import AuditRecord, EvidenceSnapshot
from bot.errors import GpunodeError
from bot.services.chatops import BotServices, permitted
from bot.services.clusters import incident_at
from bot.services.ports import FilesPort, KubePort, StorePort

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Kit:
    """The kit of one node, as data: its parameters and where they were read (the surface
    renders its files: ``bot.render.prevention.render_prevention_files``)."""

    params: PreventionParams
    source: KitSource


def build_kit(view: ClusterView, source: KitSource) -> Kit:
    return Kit(params=prevention_params(view), source=source)


async def kit_from_cluster(kube: KubePort, node: str, *, at: datetime) -> Kit:
    """The kit for ``node`` as the cluster shows it now. NotFoundError if there is no such
    node (the gateway's message names it)."""
    view = await kube.get_cluster_view(node)
    return build_kit(view, KitSource(kind="live", at=at))


def latest_view(rows: list[EvidenceSnapshot]) -> tuple[ClusterView, datetime | None] | None:
    """The newest stored cluster view among an incident's snapshot rows, with its time."""
    for row in reversed(rows):
        if row.view is not None:
            return row.view, row.at
    return None


async def kit_from_incident(store: StorePort, incident: Incident) -> Kit:
    """The kit from the cluster view stored with ``incident``'s latest diagnosis."""
    found = latest_view(list(await store.snapshots(incident.id)))
    if found is None:
        ref = format_node_ref(incident.cluster, incident.node)
        raise GpunodeError(
            f"{incident.id} has no stored evidence yet: run `/gpunode diagnose {ref}` "
            f"first, or `/gpunode prevent {ref}` to read the node as it is now",
            code="no_evidence",
            key="kit_no_evidence",
            params={"incident": incident.id, "node": ref},
        )
    view, at = found
    return build_kit(view, KitSource(kind="snapshot", at=at, incident=incident.id))


async def share_kit(
    files: FilesPort,
    kit: Kit,
    *,
    channel: str,
    user: str,
    store: StorePort | None = None,
    incident: Incident | None = None,
    at: datetime | None = None,
) -> list[str]:
    """The kit through the presenter (its explanation, then its files in one upload) into
    ``incident``'s thread, else ``channel``. With ``store``, ``incident`` and ``at``: a
    timeline note naming the files, by ``user``. Returns the file names."""
    shared = await files.kit(channel, user, kit.params, kit.source, incident=incident)
    if store is not None and incident is not None and at is not None:
        await store.append_timeline(
            TimelineEntry(
                incident_id=incident.id,
                at=at,
                kind="note",
                actor=user,
                text="prevention kit shared",
                data={"files": shared} | said("prevention_shared"),
            )
        )
    return shared


async def prevent_node(
    kube: KubePort,
    store: StorePort,
    files: FilesPort,
    at: NodeRef,
    *,
    channel: str,
    user: str,
    now: datetime,
) -> list[str]:
    """``/gpunode prevent [CLUSTER/]NODE``: the kit as the node ``at`` is now (``kube``: its
    cluster's port), into the thread of the node's open incident in ``channel`` if there is
    one (in the thread's language), else into ``channel`` itself (the channel's language,
    else the asking person's)."""
    incident = next(
        (
            i
            for i in await store.open_incidents(at.node, at.cluster)
            if i.channel == channel and i.thread_ts
        ),
        None,
    )
    kit = await kit_from_cluster(kube, at.node, at=now)
    return await share_kit(
        files, kit, channel=channel, user=user, store=store, incident=incident, at=now
    )


async def prevent_incident(
    store: StorePort,
    files: FilesPort,
    incident_id: str,
    *,
    user: str,
    now: datetime,
    incident: Incident | None = None,
) -> list[str]:
    """The **Prevention kit** button: the kit from the incident's latest stored evidence,
    into the incident's thread, once per snapshot (a repeat click, on any replica, uploads
    nothing: ``already_shared``), and audited as ``prevention_kit.upload``."""
    incident = incident or await store.get_incident(incident_id)
    if incident is None:
        raise GpunodeError(
            f"there is no incident {incident_id}; `/gpunode status` lists the open incidents",
            code="not_found",
            key="incident_not_found",
            params={"incident": incident_id},
        )
    rows = [r for r in await store.snapshots(incident.id) if r.view is not None]
    if rows:
        # one upload per snapshot: the dedupe key is claimed atomically before uploading
        key = f"prevention-kit:{incident.id}:{rows[-1].id}"
        if not await store.remember_event(key, at=now):
            raise GpunodeError(
                f"the prevention kit of {incident.id}'s latest evidence is already in its "
                "thread; diagnose again for a kit from newer evidence",
                code="already_shared",
                key="kit_already_shared",
                params={"incident": incident.id},
            )
    kit = await kit_from_incident(store, incident)
    shared = await share_kit(
        files, kit, channel=incident.channel, user=user, store=store, incident=incident, at=now
    )
    await store.append_audit(
        AuditRecord(
            at=now,
            actor=user,
            action="prevention_kit.upload",
            channel=incident.channel,
            incident_id=incident.id,
            decision="shared",
            cluster=incident.cluster,
            detail=f"snapshot {rows[-1].id if rows else '-'}: {', '.join(shared)}",
            detail_code="kit_shared",
            detail_params={"snapshot": rows[-1].id if rows else "-", "files": list(shared)},
        )
    )
    return shared


async def prevention_button(s: BotServices, incident: str, *, user: str, channel: str) -> None:
    """The **Prevention kit** button: the role checked at the click (``view``: the kit only
    reads), then the kit from the incident's latest evidence into its thread; a failure is
    told to the clicker."""
    try:
        found = await s.store.get_incident(incident)
        if found is None:
            raise GpunodeError(
                f"there is no incident {incident}; `/gpunode status` lists the open incidents",
                code="not_found",
                key="incident_not_found",
                params={"incident": incident},
            )
        # the role is checked in the incident's cluster: the kit shows that cluster's node
        if await permitted(
            s, "view", user=user, channel=channel, cluster=incident_at(s.clusters, found).cluster
        ):
            await prevent_incident(
                s.store, s.files, incident, user=user, now=s.clock(), incident=found
            )
    except GpunodeError as err:
        told = notice(
            "command_failed",
            message=err.message,
            code=err.code,
            error_key=err.key,
            error_params=err.params,
        )
        try:
            await s.thread.tell(channel, user, told)
        except GpunodeError:
            log.warning("could not tell %s the prevention kit failed: %s", user, err.code)
