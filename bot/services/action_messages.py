"""What the action flow tells people, as outcomes handed to the ``ThreadPort`` (whose
presenter picks the language and the words): a refusal only the clicking user sees, a
notice, and the action's message replaced by its outcome. Nothing here words anything.

A refusal with audit fields is recorded too (``ActionJournal``), before it is told."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from bot.core.governance.policy import Deny
from bot.core.model.incidents import Incident
from bot.core.reporting.outcomes import (
    ActionFailure,
    ActionResult,
    Notice,
    Refused,
    StepsReport,
)
from bot.core.reporting.records import ActionRecord
from bot.errors import GpunodeError
from bot.services.action_journal import ActionJournal
from bot.services.action_records import (
    incident_of,
    plan_of_record,
    reason_of,
    refusal_detail,
    report_of,
)
from bot.services.executing import StepsResult
from bot.services.ports import StorePort, ThreadPort

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ActionMessages:
    """The flow's messages in one cluster: ``thread`` (the port), ``store`` (to find the
    message and incident of an action), ``journal`` (refusals are audited) and
    ``node_ref`` (how a node of this cluster is named in a message)."""

    thread: ThreadPort
    store: StorePort
    journal: ActionJournal
    node_ref: Callable[[str], str]

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
        with ``audit`` fields, record the refusal too: its code and parameters, and as
        the detail a policy denial's English reason or any other refusal's code and
        parameters spelled out."""
        told = Refused(code=why.code, params=why.params) if isinstance(why, Deny) else why
        if audit is not None:
            detail = why.reason if isinstance(why, Deny) else refusal_detail(why)
            fields = {
                "channel": channel,
                "decision": "refused",
                "detail": detail,
                "detail_code": told.code,
                "detail_params": told.params,
            } | audit
            await self.journal.audit(actor=user, **fields)
        await self.thread.tell(channel, user, told, thread_ts=thread_ts)

    async def say(
        self, channel: str, user: str, key: str, *, thread_ts: str | None = None, **params: Any
    ) -> None:
        """Tell only ``user`` the notice ``key`` (in the thread ``thread_ts``, when given)."""
        await self.thread.tell(channel, user, Notice(key=key, params=params), thread_ts=thread_ts)

    async def update_message(
        self,
        record: ActionRecord,
        state: str,
        *,
        by: str,
        failure: ActionFailure | None = None,
        why: Refused | None = None,
        result: StepsResult | StepsReport | None = None,
        undo: bool = False,
        incident: Incident | None = None,
    ) -> None:
        """Replace the action's message (and its buttons) with its outcome (``failure``,
        ``why``: why it ended, as codes the presenter words). ``incident``: the action's
        incident when the caller has it (else it is read)."""
        if incident is None:
            incident = await incident_of(self.store, record)
        ts = record.message_ts
        if ts is None:  # a record read before its message was posted
            fresh = await self.store.get_action(record.action_id)
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
            failure=failure,
            why=why,
            result=report_of(result),
            undo=undo,
        )
        try:
            await self.thread.update(incident.channel, ts, told, incident=incident)
        except GpunodeError as err:
            # the state and the audit row are already written; a lost edit must not undo them
            log.warning("could not update action message %s: %s", record.action_id, err)
