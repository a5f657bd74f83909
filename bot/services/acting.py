"""What every step of the action flow shares: its dependencies.

The flow is split by step (``requesting``, ``approving``, ``applying``, ``undoing``,
``reconciling``); each step is a function over ``ActDeps``. ``bot.services.act.ActService``
is the facade the Slack glue calls. ``ActDeps`` holds dependencies, grouped: ``ports`` (the
store, Slack's user groups, the thread, the metrics), ``config`` (clock, ids, limits), the
role policy, the clusters and the one acted on; its methods locate what a step needs in
that cluster (the KubePort, the principal, the identity a change goes out as). What a step
records goes through ``journal`` (``bot.services.action_journal``: audit rows, timeline
entries); what it tells people through ``messages`` (``bot.services.action_messages``:
outcomes for the ``ThreadPort``). Reads that a step passes along (``incident_of``,
``snapshot_of``, ``available_plan``) are functions over the store
(``bot.services.action_records``). Nothing here touches the cluster.

The steps speak data: every message of the flow is an outcome of ``bot.core.reporting.outcomes``
(``ActionForm``, ``DryRun``, ``ApprovalRequested``, ``ApprovalClosed``, ``ActionResult``,
``ActionDiff``, refusals and notices) handed to the ``ThreadPort``, whose presenter picks the
language and words it. What a step has read (the action, its incident, the evidence) is
passed along, not read again.

Many clusters: ``ActService`` hands each step the deps of the cluster its incident or action
is in (``for_cluster``): that cluster's KubePort, and a principal whose roles are those the
policy grants in that cluster.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime

from bot.core.governance.impersonation import ActingAs, acting_as
from bot.core.governance.policy import Policy, Principal, identity_of
from bot.core.model.clusters import format_node_ref
from bot.errors import GpunodeError, PolicyError
from bot.services.action_journal import ActionJournal
from bot.services.action_messages import ActionMessages
from bot.services.background import Background
from bot.services.clusters import ClusterRegistry
from bot.services.diagnose import DiagnoseService
from bot.services.ports import (
    ActionMetrics,
    ChatPort,
    KubePort,
    NoActionMetrics,
    StorePort,
    ThreadPort,
)

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ActPorts:
    """What the flow talks to: the store (incidents, actions, approvals, audit), Slack's
    user groups, the thread (every message, as outcomes the presenter words) and the
    action metrics."""

    store: StorePort
    chat: ChatPort
    thread: ThreadPort
    metrics: ActionMetrics = field(default_factory=NoActionMetrics)


@dataclass(frozen=True)
class ActConfig:
    """The flow's clock, ids and limits: plain values from the settings."""

    clock: Callable[[], datetime]
    new_id: Callable[[], str]
    replica_id: str
    evidence_max_age_s: float
    approval_ttl_s: int
    watch_timeout_s: float = 180.0
    watch_interval_s: float = 2.0


@dataclass(frozen=True)
class ActDeps:
    """The dependencies of every step: its ports, its configuration, the role policy, the
    clusters served with the one these deps act on (``cluster``, its port ``kube``), the
    diagnosis service (re-diagnosis after an action) and the background tasks."""

    ports: ActPorts
    config: ActConfig
    policy: Policy
    clusters: ClusterRegistry
    diagnose: DiagnoseService
    bg: Background
    #: the cluster these deps act on, by name (the process-wide deps: the default one; a
    #: sweep over every cluster's actions takes each action's, ``for_cluster``)
    cluster: str

    @property
    def kube(self) -> KubePort:
        """The port of the cluster these deps act on."""
        return self.clusters.port(self.cluster)

    def for_cluster(self, name: str) -> ActDeps:
        """These deps, acting on cluster ``name`` (a stored row's: ``ClusterRegistry.stored``)."""
        return dataclasses.replace(self, cluster=name)

    def node_ref(self, node: str) -> str:
        """``cluster/node`` when several clusters are served, else the node's name."""
        return format_node_ref(self.cluster, node, show_cluster=self.clusters.multi)

    def acting(
        self, user: str, *, approvers: tuple[str, ...] = (), action_id: str = ""
    ) -> ActingAs | None:
        """Who ``user``'s tier action goes out as: their mapped Kubernetes identity when the
        policy's impersonation is on (None: impersonation is off, the bot's own
        ServiceAccount acts). Fails closed: with impersonation on, a user without an identity
        (e.g. unmapped after the request was made) raises PolicyError, never falls back to
        the bot's rights."""
        if not self.policy.impersonation.enabled:
            return None
        identity = identity_of(user, self.policy)
        if identity is None:
            raise PolicyError(
                f"gpunode acts as the person here (impersonation) and the policy file maps no "
                f"Kubernetes identity to {user}; ask an admin to add them under "
                "impersonation.users, then request the action again"
            )
        return acting_as(identity, slack_user=user, approvers=approvers, action_id=action_id)

    def kube_as(self, acting: ActingAs | None) -> KubePort:
        """The KubePort a tier action uses: impersonating ``acting``, else the bot's own."""
        return self.kube if acting is None else self.kube.impersonating(acting)

    async def principal(self, user: str, channel: str) -> Principal:
        """The clicking user in this deps' cluster (roles scoped to other clusters do not
        apply): ``principal_of``."""
        return await principal_of(self.ports.chat, self.policy, user, channel, self.cluster)

    @property
    def journal(self) -> ActionJournal:
        """What the flow records in this cluster: audit rows, timeline entries."""
        return ActionJournal(
            store=self.ports.store,
            metrics=self.ports.metrics,
            clock=self.config.clock,
            cluster=self.cluster,
        )

    @property
    def messages(self) -> ActionMessages:
        """What the flow tells people in this cluster, as outcomes for the thread port."""
        return ActionMessages(
            thread=self.ports.thread,
            store=self.ports.store,
            journal=self.journal,
            node_ref=self.node_ref,
        )


async def principal_of(
    chat: ChatPort, policy: Policy, user: str, channel: str, cluster: str | None
) -> Principal:
    """The clicking user with the policy's user groups they belong to (resolved now), in
    ``cluster`` (None: no one cluster is in question, e.g. a listing across clusters: every
    role they are bound to counts)."""
    groups = {g for b in policy.bindings.values() for g in b.usergroups}
    member_of = set()
    for group in sorted(groups):
        try:
            if user in await chat.usergroup_members(group):
                member_of.add(group)
        except GpunodeError:
            log.warning("could not resolve user group %s; treating as not a member", group)
    return Principal(
        user_id=user, usergroup_ids=frozenset(member_of), channel_id=channel, cluster=cluster
    )
