"""The policy file's impersonation block: who each Slack user acts as, and what
a tier action then carries."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from bot.core.governance.impersonation import (
    EXTRA_ACTION,
    EXTRA_APPROVED_BY,
    EXTRA_SLACK_USER,
    acting_as,
)
from bot.core.governance.policy import (
    ActionRequestInfo,
    Allow,
    Deny,
    NeedsApproval,
    Policy,
    Principal,
    decide,
    identity_of,
    parse_policy,
)
from bot.errors import PolicyError

EXAMPLE = Path(__file__).resolve().parents[2] / "deploy" / "policy.example.yaml"
SRE, ONCALL_GROUP_MEMBER = "U0SRE00001", "U0SOMEONE1"


def _policy(**impersonation: Any) -> Policy:
    data = yaml.safe_load(EXAMPLE.read_text(encoding="utf-8"))
    data["impersonation"] = impersonation
    return parse_policy(data, source="policy.yaml")


MAPPED = {"enabled": True, "users": {SRE: {"user": "sre@example.com", "groups": ["gpu-oncall"]}}}


def test_impersonation_is_off_unless_the_policy_turns_it_on() -> None:
    policy = _policy()
    assert identity_of(SRE, policy) is None
    assert decide(Principal(user_id=SRE), ActionRequestInfo(tier=2), policy) == Allow()


def test_a_mapped_user_acts_as_their_kubernetes_identity() -> None:
    policy = _policy(**MAPPED)
    identity = identity_of(SRE, policy)
    assert identity is not None and identity.user == "sre@example.com"
    assert decide(Principal(user_id=SRE), ActionRequestInfo(tier=2), policy) == Allow()
    assert isinstance(
        decide(Principal(user_id=SRE), ActionRequestInfo(tier=1), policy), NeedsApproval
    )


@pytest.mark.parametrize("undo", [False, True])
def test_a_responder_without_an_identity_cannot_act_or_undo(undo: bool) -> None:
    policy = _policy(**MAPPED)
    who = Principal(user_id=ONCALL_GROUP_MEMBER, usergroup_ids=frozenset({"S0ONCALL1"}))
    decision = decide(who, ActionRequestInfo(tier=2, undo=undo), policy)
    assert isinstance(decision, Deny)
    assert "impersonation.users" in decision.reason


@pytest.mark.parametrize(
    ("identity", "says"),
    [
        ({"user": "system:admin"}, "system identity"),
        ({"user": "x", "groups": ["system:masters"]}, "system identity"),
        ({"user": "x\nImpersonate-User: admin"}, "control character"),
        ({"user": " x"}, "surrounding spaces"),
        ({"user": "x", "role": "admin"}, "Extra inputs"),
    ],
)
def test_identities_that_would_reach_past_a_person_are_refused(
    identity: dict[str, Any], says: str
) -> None:
    with pytest.raises(PolicyError, match=says):
        _policy(enabled=True, users={SRE: identity})


def test_a_service_account_user_may_be_mapped() -> None:
    policy = _policy(enabled=True, users={SRE: {"user": "system:serviceaccount:ops:sre-bot"}})
    assert identity_of(SRE, policy) is not None


def test_an_action_carries_the_requester_the_approvers_and_its_id_as_extras() -> None:
    identity = identity_of(SRE, _policy(**MAPPED))
    assert identity is not None
    acting = acting_as(
        identity, slack_user=SRE, approvers=("U0BOB", "U0BOB", "U0C"), action_id="a1"
    )
    assert (acting.user, acting.groups) == ("sre@example.com", ("gpu-oncall",))
    assert acting.extra_values(EXTRA_SLACK_USER) == (SRE,)
    assert acting.extra_values(EXTRA_APPROVED_BY) == ("U0BOB", "U0C")
    assert acting.extra_values(EXTRA_ACTION) == ("a1",)
