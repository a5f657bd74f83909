"""What a chat surface (the slash command, a mention in an incident thread) lends the command
table: the role policy (``chatops.denied``) and the effects that happen in chat, where a
diagnosis opens or joins the node's incident thread, a kit and a postmortem are posted into
it, and a resolution is said in it (``bot.services.commands``)."""

from __future__ import annotations

from dataclasses import dataclass

from bot.core.governance.policy import Permission
from bot.core.model.clusters import NodeRef
from bot.core.model.incidents import Incident
from bot.core.reporting.outcomes import Notice, Outcome, Posted, Refused, Resolved
from bot.services import chatops
from bot.services.chatops import BotServices
from bot.services.clusters import ClusterRegistry
from bot.services.commands import Asker
from bot.services.operations import IncidentOps
from bot.services.prevention import prevent_node
from bot.services.timelines import upload_timeline


@dataclass(frozen=True)
class ChatSurface:
    """The ``CommandSurface`` of chat, over the bot's services."""

    s: BotServices

    @property
    def ops(self) -> IncidentOps:
        return self.s.ops

    @property
    def clusters(self) -> ClusterRegistry:
        return self.s.clusters

    async def refusal(
        self, permission: Permission, asker: Asker, cluster: str | None
    ) -> Refused | None:
        no = await chatops.denied(
            self.s, permission, user=asker.user, channel=asker.channel, cluster=cluster
        )
        return None if no is None else Refused(code=no.code, params=no.params)

    async def diagnose(self, at: NodeRef, asker: Asker) -> Outcome:
        done = await self.s.diagnose.diagnose(at, channel=asker.channel, user=asker.user)
        # a failure was told in the thread (or to the person) already
        return Posted(verb="diagnose", ok=done.error is None)

    async def prevent(self, at: NodeRef, asker: Asker) -> Outcome:
        await prevent_node(
            self.s.clusters.port(at.cluster),
            self.s.store,
            self.s.files,
            at,
            channel=asker.channel,
            user=asker.user,
            now=self.s.clock(),
        )
        return Posted(verb="prevent")

    async def timeline(self, incident: Incident, asker: Asker) -> Outcome:
        await upload_timeline(self.s, incident, user=asker.user)
        return Posted(verb="timeline")

    async def resolved(self, incident: Incident, asker: Asker, note: str) -> Outcome:
        """Said in the incident's thread (its root line refreshed), and the audit head
        anchored; the asker is told only when there is no thread to read it in."""
        s = self.s
        if incident.thread_ts:
            told = Notice(
                key="resolved", params={"incident_id": incident.id, "by": asker.user, "note": note}
            )
            await s.thread.post(incident.channel, told, incident=incident)
            await s.diagnose.refresh_root(incident.id)
        if s.anchors is not None:  # the head, outside the store (and in the thread)
            await s.anchors.anchor(incident=incident)
        return Resolved(
            incident_id=incident.id, by=asker.user, note=note, in_thread=bool(incident.thread_ts)
        )
