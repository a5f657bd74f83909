"""The action use-case, as one facade: tier button -> confirmation -> dry run -> Apply ->
(approval) -> exactly-once execution -> outcome, Undo, re-diagnosis and a before/after diff.

Safety properties, each enforced in the step modules and tested end to end
(``tests/services/test_act_*.py``):
- roles are checked at every click, on the identity Slack signed (never on message content);
- nothing touches the cluster before a server-side dry run of the exact changes has been
  shown and the requester confirmed it (``requesting``); tier 1 also needs an approver other
  than the requester (``approving``);
- every action runs at most once: ``store.claim_action`` is one atomic UPDATE made before
  any cluster call, so double clicks, Slack retries and two replicas cannot run it twice
  (``applying``); Undo likewise through ``store.claim_undo`` (``undoing``);
- before executing, the node and the targets are re-read and a stale plan is refused;
- every decision, refusal and API change is appended to the audit log;
- actions a crash left half-way are reported at the next start (``reconciling``).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

from bot.core.governance.policy import Policy, Principal
from bot.core.model.actions import ActionPlan
from bot.core.reporting.records import ActionRecord
from bot.services import applying, approving, reconciling, requesting, undoing
from bot.services.acting import ActConfig, ActDeps, ActPorts, principal_of
from bot.services.background import Background
from bot.services.clusters import ClusterRegistry, incident_at
from bot.services.diagnose import DiagnoseService
from bot.services.ports import (
    ActionMetrics,
    ChatPort,
    NoActionMetrics,
    StorePort,
    ThreadPort,
)


class ActService:
    """One per process. Every public method is safe to call concurrently and repeatedly.

    ``clusters``: every cluster served (one cluster is a registry of one); each click acts
    on its incident's (or action's) cluster."""

    def __init__(
        self,
        clusters: ClusterRegistry,
        store: StorePort,
        chat: ChatPort,
        diagnose: DiagnoseService,
        bg: Background,
        *,
        policy: Policy,
        thread: ThreadPort,
        clock: Callable[[], datetime],
        new_id: Callable[[], str],
        replica_id: str,
        evidence_max_age_s: float,
        approval_ttl_s: int,
        watch_timeout_s: float = 180.0,
        watch_interval_s: float = 2.0,
        metrics: ActionMetrics | None = None,
    ) -> None:
        self.deps = ActDeps(
            ports=ActPorts(
                store=store, chat=chat, thread=thread, metrics=metrics or NoActionMetrics()
            ),
            config=ActConfig(
                clock=clock,
                new_id=new_id,
                replica_id=replica_id,
                evidence_max_age_s=evidence_max_age_s,
                approval_ttl_s=approval_ttl_s,
                watch_timeout_s=watch_timeout_s,
                watch_interval_s=watch_interval_s,
            ),
            policy=policy,
            clusters=clusters,
            diagnose=diagnose,
            bg=bg,
            cluster=clusters.default,
        )
        # a step always gets ``for_cluster(its incident's or action's)``; the sweeps
        # (expiry, reconciliation) take each action's

    async def principal(self, user: str, channel: str, *, cluster: str | None) -> Principal:
        """The user's principal in ``cluster`` (None: no cluster in question, e.g. a listing
        across clusters: every role they are bound to counts)."""
        d = self.deps
        return await principal_of(d.ports.chat, d.policy, user, channel, cluster)

    async def _incident_deps(self, incident_id: str) -> ActDeps:
        incident = await self.deps.ports.store.get_incident(incident_id)
        if incident is None:
            return self.deps
        return self.deps.for_cluster(incident_at(self.deps.clusters, incident).cluster)

    async def _action_deps(self, action_id: str) -> tuple[ActDeps, ActionRecord | None]:
        """The deps of the action's cluster, and the action as read (passed along)."""
        record = await self.deps.ports.store.get_action(action_id)
        if record is None:
            return self.deps, None
        return self.deps.for_cluster(self.deps.clusters.stored(record.cluster)), record

    async def open_confirmation(
        self,
        *,
        tier: int,
        incident_id: str,
        plan_id: str,
        user: str,
        channel: str,
        trigger_id: str,
    ) -> None:
        """Tier button: check the role, open the confirmation modal (within 3 s of the click)."""
        d = await self._incident_deps(incident_id)
        await requesting.open_confirmation(
            d,
            tier=tier,
            incident_id=incident_id,
            plan_id=plan_id,
            user=user,
            channel=channel,
            trigger_id=trigger_id,
        )

    async def validate_submission(
        self, meta: dict[str, Any], values: dict[str, Any], *, user: str = ""
    ) -> tuple[ActionPlan | None, dict[str, str]]:
        """Modal submitted: the (edited) plan, or errors keyed by block id."""
        d = await self._incident_deps(str(meta.get("incident", "")))
        return await requesting.validate_submission(d, meta, values, user=user)

    async def submitted(
        self, *, meta: dict[str, Any], plan: ActionPlan, reason: str, user: str
    ) -> str:
        """Record the request, dry-run it, post the dry run with Apply/Cancel; its id."""
        d = await self._incident_deps(str(meta.get("incident", "")))
        return await requesting.submitted(d, meta=meta, plan=plan, reason=reason, user=user)

    async def apply(self, *, action_id: str, user: str, channel: str) -> None:
        """The requester's Apply: execute now, or ask for approval when the policy says so."""
        d, record = await self._action_deps(action_id)
        await applying.apply(d, record, action_id=action_id, user=user, channel=channel)

    async def cancel(self, *, action_id: str, user: str, channel: str) -> None:
        d, record = await self._action_deps(action_id)
        await requesting.cancel(d, record, action_id=action_id, user=user, channel=channel)

    async def vote(self, *, approval_id: str, user: str, channel: str, yes: bool) -> None:
        """Approve (``yes``) or Deny; the vote that reaches the quorum executes the action."""
        approval = await self.deps.ports.store.get_approval(approval_id)
        d = (await self._action_deps(approval.action_id))[0] if approval else self.deps
        await approving.vote(d, approval_id=approval_id, user=user, channel=channel, yes=yes)

    async def undo(self, *, action_id: str, user: str, channel: str) -> None:
        d, record = await self._action_deps(action_id)
        await undoing.undo(d, record, action_id=action_id, user=user, channel=channel)

    async def expire_overdue(self) -> int:
        """Expire approval requests nobody answered in time (run periodically)."""
        return await approving.expire_overdue(self.deps)

    async def reconcile_interrupted(self, *, orphaned_before: datetime | None = None) -> int:
        """Report actions a stopped process left claimed or running (``orphaned_before``:
        only those of replicas not alive since then)."""
        return await reconciling.reconcile_interrupted(self.deps, orphaned_before=orphaned_before)
