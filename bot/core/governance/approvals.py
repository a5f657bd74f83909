"""The approval state machine (pure): quorum, no self-approval, expiry, idempotent repeats.

``pending`` ends in exactly one of ``approved`` (quorum reached), ``denied`` (any eligible
approver or the requester says no), ``expired`` (the TTL passed first); an approved request
becomes ``executed`` once its action ran. Every function returns a new request and an
outcome word the caller turns into a thread update; nothing raises for a user's click, so a
replayed or late click is answered, never crashes. The store persists requests and applies
these functions inside one transaction so two approvers clicking at once both count.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Literal

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field

from bot.errors import ActionError

ApprovalState = Literal["pending", "approved", "denied", "expired", "executed"]
ApproveOutcome = Literal[
    "counted",
    "already_counted",
    "self_approval_rejected",
    "not_eligible",
    "expired",
    "already_final",
    "approved",
]
DenyOutcome = Literal["denied", "not_eligible", "expired", "already_final"]
FINAL_STATES: frozenset[ApprovalState] = frozenset({"approved", "denied", "expired", "executed"})


class Vote(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    user: str
    at: AwareDatetime
    note: str = ""


class ApprovalRequest(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str
    action_id: str
    tier: int = Field(ge=1, le=3)
    requester: str
    quorum: int = Field(ge=0, description="approvers needed besides the requester")
    created_at: AwareDatetime
    expires_at: AwareDatetime
    approvals: tuple[Vote, ...] = ()
    denials: tuple[Vote, ...] = ()
    state: ApprovalState = "pending"
    executed_at: AwareDatetime | None = None

    @property
    def approvers(self) -> tuple[str, ...]:
        return tuple(vote.user for vote in self.approvals)

    @property
    def remaining(self) -> int:
        return max(0, self.quorum - len(self.approvals))


def new_request(
    request_id: str,
    action_id: str,
    *,
    tier: int,
    requester: str,
    quorum: int,
    at: datetime,
    ttl_s: int,
) -> ApprovalRequest:
    """A pending request; with quorum 0 it is approved from the start."""
    return ApprovalRequest(
        id=request_id,
        action_id=action_id,
        tier=tier,
        requester=requester,
        quorum=quorum,
        created_at=at,
        expires_at=at + timedelta(seconds=ttl_s),
        state="approved" if quorum == 0 else "pending",
    )


def expire_if_due(req: ApprovalRequest, at: datetime) -> ApprovalRequest:
    """``pending`` past ``expires_at`` becomes ``expired``; anything else is returned as is."""
    if req.state == "pending" and at >= req.expires_at:
        return req.model_copy(update={"state": "expired"})
    return req


def approve(
    req: ApprovalRequest, user: str, at: datetime, *, eligible: bool
) -> tuple[ApprovalRequest, ApproveOutcome]:
    """Count ``user``'s approval. Checks, in order: repeat, expiry, finality, self, role."""
    if user in req.approvers:
        return req, "already_counted"
    req = expire_if_due(req, at)
    if req.state == "expired":
        return req, "expired"
    if req.state in FINAL_STATES:
        return req, "already_final"
    if user == req.requester:
        return req, "self_approval_rejected"
    if not eligible:
        return req, "not_eligible"
    approvals = (*req.approvals, Vote(user=user, at=at))
    if len(approvals) >= req.quorum:
        return req.model_copy(update={"approvals": approvals, "state": "approved"}), "approved"
    return req.model_copy(update={"approvals": approvals}), "counted"


def deny(
    req: ApprovalRequest, user: str, at: datetime, *, eligible: bool, note: str = ""
) -> tuple[ApprovalRequest, DenyOutcome]:
    """One eligible "no" (or the requester withdrawing) ends a pending request."""
    req = expire_if_due(req, at)
    if req.state == "expired":
        return req, "expired"
    if req.state in FINAL_STATES:
        return req, "already_final"
    if not eligible and user != req.requester:
        return req, "not_eligible"
    denials = (*req.denials, Vote(user=user, at=at, note=note))
    return req.model_copy(update={"denials": denials, "state": "denied"}), "denied"


def mark_executed(req: ApprovalRequest, at: datetime) -> ApprovalRequest:
    """The approved action ran. Refuses anything but ``approved`` so it cannot run twice."""
    if req.state != "approved":
        raise ActionError(
            f"approval {req.id} is {req.state}, not approved; request the action again"
        )
    return req.model_copy(update={"state": "executed", "executed_at": at})
