from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from bot.core.governance.approvals import (
    ApprovalRequest,
    approve,
    deny,
    expire_if_due,
    mark_executed,
    new_request,
)
from bot.errors import ActionError

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
SOON = T0 + timedelta(minutes=1)
LATE = T0 + timedelta(minutes=16)


def request(quorum: int = 1) -> ApprovalRequest:
    return new_request("APR-1", "ACT-1", tier=1, requester="U0REQ", quorum=quorum, at=T0, ttl_s=900)


def test_quorum_zero_is_approved_from_the_start() -> None:
    assert request(quorum=0).state == "approved"


@pytest.mark.parametrize(
    ("user", "at", "eligible", "outcome", "state"),
    [
        ("U0APP", SOON, True, "approved", "approved"),
        ("U0REQ", SOON, True, "self_approval_rejected", "pending"),
        ("U0VIEW", SOON, False, "not_eligible", "pending"),
        ("U0APP", LATE, True, "expired", "expired"),
        ("U0APP", T0 + timedelta(seconds=900), True, "expired", "expired"),
    ],
)
def test_approval_outcomes_for_a_quorum_of_one(
    user: str, at: datetime, eligible: bool, outcome: str, state: str
) -> None:
    updated, got = approve(request(), user, at, eligible=eligible)
    assert (got, updated.state) == (outcome, state)


def test_self_approval_is_rejected() -> None:
    updated, outcome = approve(request(), "U0REQ", SOON, eligible=True)
    assert outcome == "self_approval_rejected"
    assert updated.approvals == ()


def test_repeated_approval_is_idempotent() -> None:
    req = request(quorum=2)
    once, first = approve(req, "U0APP", SOON, eligible=True)
    twice, second = approve(once, "U0APP", SOON + timedelta(seconds=1), eligible=True)
    assert (first, second) == ("counted", "already_counted")
    assert twice == once
    assert twice.approvers == ("U0APP",)


def test_a_repeat_click_after_quorum_is_still_idempotent() -> None:
    done, _ = approve(request(), "U0APP", SOON, eligible=True)
    again, outcome = approve(done, "U0APP", LATE, eligible=True)
    assert (outcome, again) == ("already_counted", done)


def test_expired_approval_is_refused() -> None:
    updated, outcome = approve(request(), "U0APP", LATE, eligible=True)
    assert (outcome, updated.state, updated.approvals) == ("expired", "expired", ())
    _, again = approve(updated, "U0OTHER", LATE, eligible=True)
    assert again == "expired"


def test_quorum_two_needs_two_different_approvers() -> None:
    req = request(quorum=2)
    one, first = approve(req, "U0A", SOON, eligible=True)
    assert (first, one.state, one.remaining) == ("counted", "pending", 1)
    two, second = approve(one, "U0B", SOON, eligible=True)
    assert (second, two.state, two.approvers) == ("approved", "approved", ("U0A", "U0B"))
    _, third = approve(two, "U0C", SOON, eligible=True)
    assert third == "already_final"


def test_denial_ends_the_request() -> None:
    denied, outcome = deny(request(quorum=2), "U0APP", SOON, eligible=True, note="too risky")
    assert (outcome, denied.state, denied.denials[0].note) == ("denied", "denied", "too risky")
    _, after = approve(denied, "U0OTHER", SOON, eligible=True)
    assert after == "already_final"


@pytest.mark.parametrize(
    ("user", "eligible", "at", "outcome"),
    [
        ("U0REQ", False, SOON, "denied"),  # the requester may withdraw
        ("U0VIEW", False, SOON, "not_eligible"),
        ("U0APP", True, LATE, "expired"),
    ],
)
def test_deny_outcomes(user: str, eligible: bool, at: datetime, outcome: str) -> None:
    assert deny(request(), user, at, eligible=eligible)[1] == outcome


def test_deny_after_approval_is_already_final() -> None:
    done, _ = approve(request(), "U0APP", SOON, eligible=True)
    assert deny(done, "U0B", SOON, eligible=True) == (done, "already_final")


def test_expire_if_due_only_touches_pending_requests() -> None:
    assert expire_if_due(request(), SOON).state == "pending"
    assert expire_if_due(request(), LATE).state == "expired"
    done, _ = approve(request(), "U0APP", SOON, eligible=True)
    assert expire_if_due(done, LATE).state == "approved"


def test_an_approved_request_executes_once() -> None:
    done, _ = approve(request(), "U0APP", SOON, eligible=True)
    executed = mark_executed(done, SOON)
    assert (executed.state, executed.executed_at) == ("executed", SOON)
    with pytest.raises(ActionError, match="request the action again"):
        mark_executed(executed, SOON)
    with pytest.raises(ActionError):
        mark_executed(request(), SOON)
