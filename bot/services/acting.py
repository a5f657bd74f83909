"""What every step of the action flow shares: its dependencies and small helpers.

The flow is split by step (``requesting``, ``approving``, ``applying``, ``undoing``,
``reconciling``); each step is a function over ``ActDeps``. ``bot.services.act.ActService``
is the facade the Slack glue calls. ``ActDeps`` holds dependencies, grouped: ``ports`` (the
store, Slack's user groups, the thread, the metrics), ``config`` (clock, ids, limits), the
role policy, the clusters and the one acted on. Its methods are what a step does with them
in one cluster (audit, refuse, the principal, the identity a change goes out as); reads
that a step passes along (``incident_of``, ``snapshot_of``, ``available_plan``) are
functions over the store. Helpers here never touch the cluster.

The steps speak data: every message of the flow is an outcome of ``bot.core.reporting.outcomes``
(``ActionForm``, ``DryRun``, ``ApprovalRequested``, ``ApprovalClosed``, ``ActionResult``,
``ActionDiff``, refusals and notices) handed to the ``ThreadPort``, whose presenter picks the
language and words it. What a step has read (the action, its incident, the evidence) is
passed along, not read again.

Many clusters: ``ActService`` hands each step the deps of the cluster its incident or action
is in (``for_cluster``): that cluster's KubePort, and a principal whose roles are those the
policy grants in that cluster.

Audit rule: every click that is refused is audited too (who tried what, and why not), not
only the ones that changed something; the audit log answers "who tried to do what, when".
"""

from __future__ import annotations

import dataclasses
import logging
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from bot.core.governance.impersonation import ActingAs, acting_as
from bot.core.governance.policy import TIERS, Deny, Policy, Principal, Tier, identity_of
from bot.core.model.actions import ActionPlan
from bot.core.model.clusters import format_node_ref
from bot.core.model.incidents import Incident, TimelineKind
from bot.core.reporting.outcomes import ActionResult, Notice, Refused, StepsReport
from bot.core.reporting.records import ActionRecord, AuditRecord, EvidenceSnapshot
from bot.errors import GpunodeError, PolicyError
from bot.services.background import Background
from bot.services.clusters import ClusterRegistry
from bot.services.diagnose import DiagnoseService
from bot.services.executing import StepsResult
from bot.services.ports import (
    ActionMetrics,
    ChatPort,
    KubePort,
    NoActionMetrics,
    StorePort,
    ThreadPort,
)
from bot.services.recording import append_entry

log = logging.getLogger(__name__)
#: an action's audit ``action`` column: ``tier3.execute``
_ACTION = re.compile(r"tier(?P<tier>[0-9])\.(?P<step>[a-z_]+)")


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
    #: the cluster these deps act on and its port; ``''`` in the process-wide deps that
    #: sweep every cluster's actions (their audit rows take each action's cluster)
    cluster: str = ""

    @property
    def kube(self) -> KubePort:
        """The port of the cluster these deps act on (the default one's in the sweeping
        deps, which act on no cluster of their own)."""
        return self.clusters.port(self.cluster or self.clusters.default)

    def for_cluster(self, name: str) -> ActDeps:
        """These deps, acting on cluster ``name`` (``''``: a record stored before clusters
        existed, the default one's)."""
        return dataclasses.replace(self, cluster=name or self.clusters.default)

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
        """The clicking user with the policy's user groups they belong to (resolved now),
        in this deps' cluster (roles scoped to other clusters do not apply)."""
        groups = {g for b in self.policy.bindings.values() for g in b.usergroups}
        member_of = set()
        for group in sorted(groups):
            try:
                if user in await self.ports.chat.usergroup_members(group):
                    member_of.add(group)
            except GpunodeError:
                log.warning("could not resolve user group %s; treating as not a member", group)
        return Principal(
            user_id=user,
            usergroup_ids=frozenset(member_of),
            channel_id=channel,
            cluster=self.cluster,
        )

    async def audit(self, **fields: Any) -> None:
        """Append an audit row; a row about an action (``tier<N>.<step>``) is also counted
        in ``gpunode_actions_total`` by tier, step and decision: every decision of the action
        flow is audited, so the audit call is the one place that sees them all."""
        fields.setdefault("cluster", self.cluster)
        await self.ports.store.append_audit(AuditRecord(at=self.config.clock(), **fields))
        if m := _ACTION.fullmatch(str(fields.get("action", ""))):
            self.ports.metrics.action(
                tier=m["tier"], step=m["step"], outcome=str(fields.get("decision", ""))
            )

    async def refuse(
        self,
        channel: str,
        user: str,
        why: Refused | Deny,
        *,
        thread_ts: str | None = None,
        audit: dict[str, Any] | None = None,
    ) -> None:
        """Tell only ``user`` why not (a code: the presenter words it in their language);
        with ``audit`` fields, record the refusal too (a policy denial with its English
        reason, any other refusal by its code and parameters)."""
        told = Refused(code=why.code, params=why.params) if isinstance(why, Deny) else why
        if audit is not None:
            detail = why.reason if isinstance(why, Deny) else refusal_detail(why)
            fields = {"channel": channel, "decision": "refused", "detail": detail} | audit
            await self.audit(actor=user, **fields)
        await self.ports.thread.tell(channel, user, told, thread_ts=thread_ts)

    async def say(self, channel: str, user: str, key: str, **params: Any) -> None:
        await self.ports.thread.tell(channel, user, Notice(key=key, params=params))

    async def timeline(
        self,
        incident_id: str | None,
        kind: TimelineKind,
        actor: str,
        text: str,
        data: dict[str, Any] | None = None,
    ) -> None:
        if incident_id is None:
            return
        await append_entry(
            self.ports.store, incident_id, kind, actor, text, at=self.config.clock(), data=data
        )

    async def update_message(
        self,
        record: ActionRecord,
        state: str,
        *,
        by: str,
        detail: str = "",
        why: Refused | None = None,
        result: StepsResult | StepsReport | None = None,
        undo: bool = False,
        incident: Incident | None = None,
    ) -> None:
        """Replace the action's message (and its buttons) with its outcome. ``incident``:
        the action's incident when the caller has it (else it is read)."""
        if incident is None:
            incident = await incident_of(self.ports.store, record)
        ts = record.message_ts
        if ts is None:  # a record read before its message was posted
            fresh = await self.ports.store.get_action(record.action_id)
            ts = fresh.message_ts if fresh else None
        if incident is None or ts is None:
            return
        told = ActionResult(
            action_id=record.action_id,
            plan=plan_of_record(record),
            state=state,
            requester=record.requester,
            by=by,
            reason=reason_of(record),
            node_ref=self.node_ref(record.plan.get("node", "")),
            detail=detail,
            why=why,
            result=report_of(result),
            undo=undo,
        )
        try:
            await self.ports.thread.update(incident.channel, ts, told, incident=incident)
        except GpunodeError as err:
            # the state and the audit row are already written; a lost edit must not undo them
            log.warning("could not update action message %s: %s", record.action_id, err)


async def available_plan(
    store: StorePort, incident_id: str, plan_id: str
) -> tuple[Incident, EvidenceSnapshot, ActionPlan] | None:
    """The available plan ``plan_id`` of the incident's latest evidence, with the incident
    and that evidence (read once here, passed along), or None."""
    incident = await store.get_incident(incident_id)
    snap = await store.latest_snapshot(incident_id)
    if incident is None or snap is None:
        return None
    plan = next((p for p in snap.diagnosis.plans if p.plan_id == plan_id), None)
    if plan is None or not plan.available:
        return None
    return incident, snap, plan


async def incident_of(store: StorePort, record: ActionRecord) -> Incident | None:
    """The action's incident (None: an action recorded without one, or one since gone)."""
    return await store.get_incident(record.incident_id) if record.incident_id else None


async def snapshot_of(store: StorePort, record: ActionRecord) -> EvidenceSnapshot | None:
    """The latest evidence of the action's incident (None: no incident, or no evidence)."""
    return await store.latest_snapshot(record.incident_id) if record.incident_id else None


def report_of(result: StepsResult | StepsReport | None) -> StepsReport | None:
    """What the steps did, as the outcome carries it."""
    if result is None or isinstance(result, StepsReport):
        return result
    return StepsReport.from_json(result.as_json())


def refusal_detail(why: Refused) -> str:
    """A refusal as the audit log keeps it: its code, then its parameters."""
    params = " ".join(f"{k}={v}" for k, v in sorted(why.params.items()))
    return f"{why.code} {params}".strip()


def plan_of_record(record: ActionRecord) -> ActionPlan:
    return ActionPlan.model_validate({k: v for k, v in record.plan.items() if k != "reason"})


def tier_of(value: int) -> Tier:
    """A stored tier number as the policy's ``Tier`` (1-3; anything else is a bug)."""
    if value not in TIERS:
        raise ValueError(f"no tier {value}")
    return value


def reason_of(record: ActionRecord) -> str:
    return str(record.plan.get("reason", ""))


def audit_fields(record: ActionRecord, channel: str, what: str) -> dict[str, Any]:
    """The audit columns that identify an action (``what``: request, apply, execute...)."""
    return {
        "action": f"tier{record.tier}.{what}",
        "channel": channel,
        "incident_id": record.incident_id,
        "action_id": record.action_id,
        "tier": record.tier,
    }
