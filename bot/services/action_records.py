"""The action flow's reads of its stored records and the views it takes of them: the plan
of an action, its incident, its evidence, its reason, its audit columns. Functions over
the store port and the records; nothing here writes or tells anyone anything."""

from __future__ import annotations

from typing import Any

from bot.core.governance.policy import TIERS, Tier
from bot.core.model.actions import ActionPlan
from bot.core.model.incidents import Incident
from bot.core.reporting.outcomes import Refused, StepsReport
from bot.core.reporting.records import ActionRecord, EvidenceSnapshot
from bot.services.executing import StepsResult
from bot.services.ports import StorePort


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
