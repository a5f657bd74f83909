"""What a chat surface drives, and the role check every request passes first.

``BotServices`` holds the use cases one process serves (built by ``bot.wiring.runtime``);
the Slack package translates Slack payloads into calls on them and nothing more.

``permitted``/``denied`` are closed by default: without the action service there is no
policy to grant anything, so every request is refused (said to the user, and audited); they
never fall open.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

from bot.core.governance.policy import Deny, Permission, authorize
from bot.core.model.clusters import format_node_ref
from bot.core.reporting.outcomes import Notice, refused
from bot.core.reporting.records import NO_CLUSTER, AuditRecord
from bot.errors import GpunodeError
from bot.services.anchoring import Anchors
from bot.services.background import Background
from bot.services.clusters import ClusterRegistry
from bot.services.diagnose import DiagnoseService
from bot.services.operations import IncidentOps
from bot.services.ports import (
    ChatPort,
    FilesPort,
    MetricsPort,
    NoMetrics,
    StorePort,
    ThreadPort,
)

if TYPE_CHECKING:
    from bot.services.act import ActService

log = logging.getLogger(__name__)

#: the refusal when no policy is loaded (``permitted`` never falls open); the audit's words
NO_POLICY = (
    "gpunode has no role policy loaded, so it refuses every request; "
    "an admin sets actions.policy_file and restarts it"
)
NO_POLICY_DENIAL = Deny(reason=NO_POLICY, code="no_policy")


@dataclass
class BotServices:
    #: every cluster served (one cluster is a registry of one)
    clusters: ClusterRegistry
    store: StorePort
    chat: ChatPort
    diagnose: DiagnoseService
    ops: IncidentOps
    bg: Background
    clock: Callable[[], datetime]
    channels: frozenset[str] = frozenset()  # empty = serve every channel
    #: the action service, which holds the role policy; None refuses every request
    act: ActService | None = None
    #: this bot's metrics (``/metrics``): commands are counted by verb and outcome
    metrics: MetricsPort = field(default_factory=NoMetrics)
    #: where the audit chain's head is anchored outside the store (None: nowhere)
    anchors: Anchors | None = None

    @property
    def thread(self) -> ThreadPort:
        """Where refusals and notices go, as outcomes (the surface's presenter words them)."""
        return self.diagnose.thread

    @property
    def files(self) -> FilesPort:
        """Where charts and the postmortem go, as data (the surface's presenter draws and
        words them); a bot wired without one refuses to share files."""
        if self.diagnose.charts is None:
            raise GpunodeError(
                "this bot has no presenter for files: wire DiagnoseService with charts=",
                code="no_chart_port",
            )
        return self.diagnose.charts


def audited_cluster(cluster: str | None) -> str:
    """How an audit row names the cluster a decision was made in: ``NO_CLUSTER`` for none
    in particular (None: a read across clusters)."""
    return NO_CLUSTER if cluster is None else cluster


def label(s: BotServices, incident: Any) -> str:
    """How messages name an incident's node: ``cluster/node`` when several clusters are
    served, else the node."""
    return format_node_ref(incident.cluster, incident.node, show_cluster=s.clusters.multi)


async def _audit_denied(
    s: BotServices, permission: Permission, user: str, channel: str, why: Deny, cluster: str | None
) -> None:
    """The denial as an audit row: its English reason, and its code and parameters (which
    ``gpunode audit --lang`` words)."""
    await s.store.append_audit(
        AuditRecord(
            at=s.clock(),
            actor=user,
            action=permission,
            channel=channel,
            decision="denied",
            detail=why.reason,
            detail_code=why.code,
            detail_params=why.params,
            cluster=audited_cluster(cluster),
        )
    )


async def denied(
    s: BotServices,
    permission: Permission,
    *,
    user: str,
    channel: str,
    cluster: str | None,
) -> Deny | None:
    """The policy's refusal of ``permission`` for ``user`` in ``cluster`` (roles scoped to
    other clusters do not count; None: no one cluster is in question, a read across them all,
    where a role in any counts), audited, or None if allowed.
    The caller tells the user (e.g. in a slash command's ack)."""
    if s.act is None:
        await _audit_denied(s, permission, user, channel, NO_POLICY_DENIAL, cluster)
        return NO_POLICY_DENIAL
    principal = await s.act.principal(user, channel, cluster=cluster)
    decision = authorize(principal, permission, s.act.deps.policy)
    if isinstance(decision, Deny):
        await _audit_denied(s, permission, user, channel, decision, cluster)
        return decision
    return None


async def permitted(
    s: BotServices,
    permission: Permission,
    *,
    user: str,
    channel: str,
    cluster: str | None,
    thread_ts: str | None = None,
) -> bool:
    """The policy's ``can_<permission>`` for ``user`` in ``cluster`` (None: no one cluster
    is in question, as for ``denied``); a refusal is told (ephemeral) and audited. Closed by
    default: False when no policy is loaded."""
    if s.act is None:
        await _audit_denied(s, permission, user, channel, NO_POLICY_DENIAL, cluster)
        await s.thread.tell(channel, user, refused("no_policy"), thread_ts=thread_ts)
        return False
    principal = await s.act.principal(user, channel, cluster=cluster)
    decision = authorize(principal, permission, s.act.deps.policy)
    if isinstance(decision, Deny):
        await s.act.deps.messages.refuse(
            channel,
            user,
            decision,
            thread_ts=thread_ts,
            audit={"action": permission, "decision": "denied", "cluster": audited_cluster(cluster)},
        )
        return False
    return True


async def report_malformed(
    s: BotServices, *, kind: str, user: str | None, channel: str | None, problem: str
) -> None:
    """A signed request gpunode could not use: an audit row (action ``kind``, e.g.
    ``slack.tier``), and the user told if known."""
    await s.store.append_audit(
        AuditRecord(
            at=s.clock(),
            actor=user or "unknown",
            action=kind,
            channel=channel or "",
            decision="refused",
            outcome="malformed_request",
            detail=problem,
            cluster=NO_CLUSTER,  # not read far enough to know one
        )
    )
    if user and channel:
        try:
            await s.thread.tell(
                channel, user, Notice(key="malformed_request", params={"problem": problem})
            )
        except GpunodeError as err:
            log.warning("could not tell %s about a malformed request: %s", user, err.code)
