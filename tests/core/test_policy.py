from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from bot.core.governance.policy import (
    ActionRequestInfo,
    Allow,
    Deny,
    NeedsApproval,
    Policy,
    Principal,
    authorize,
    can_approve,
    decide,
    parse_policy,
    roles_of,
)
from bot.errors import PolicyError

EXAMPLE = Path(__file__).resolve().parents[2] / "deploy" / "policy.example.yaml"


@pytest.fixture(scope="module")
def policy() -> Policy:
    return parse_policy(yaml.safe_load(EXAMPLE.read_text(encoding="utf-8")), source=str(EXAMPLE))


def who(user: str, *groups: str, channel: str = "C0INCIDENT") -> Principal:
    return Principal(user_id=user, usergroup_ids=frozenset(groups), channel_id=channel)


SRE = who("U0SRE00001")  # responder by user id
ONCALL = who("U0SOMEONE1", "S0ONCALL1")  # responder through the on-call user group
LEAD = who("U0LEAD0001", "S0OPSLEADS")  # approver
ML = who("U0MLENG001", "S0AIMLTEAM")  # viewer
ADMIN = who("U0ADMIN001")
STRANGER = who("U0NOBODY01", "S0RANDOM01")


def test_the_example_policy_binds_the_four_roles(policy: Policy) -> None:
    assert sorted(policy.roles) == ["admin", "approver", "responder", "viewer"]
    assert roles_of(ONCALL, policy) == ["responder"]
    assert roles_of(STRANGER, policy) == []


@pytest.mark.parametrize(
    ("principal", "tier", "expected"),
    [
        (SRE, 1, NeedsApproval(quorum=1, approver_roles=("admin", "approver"))),
        (ONCALL, 1, NeedsApproval(quorum=1, approver_roles=("admin", "approver"))),
        (SRE, 2, Allow()),
        (SRE, 3, Allow()),
        (ADMIN, 2, Allow()),
    ],
)
def test_responders_may_request_and_tier_one_needs_an_approver(
    policy: Policy, principal: Principal, tier: int, expected: object
) -> None:
    assert decide(principal, ActionRequestInfo(tier=tier), policy) == expected  # type: ignore[arg-type]


@pytest.mark.parametrize("principal", [ML, LEAD, STRANGER])
@pytest.mark.parametrize("tier", [1, 2, 3])
def test_people_without_a_requesting_role_are_denied_with_what_to_do(
    policy: Policy, principal: Principal, tier: int
) -> None:
    decision = decide(principal, ActionRequestInfo(tier=tier), policy)  # type: ignore[arg-type]
    assert isinstance(decision, Deny)
    assert f"tier {tier}" in decision.reason
    assert "admin or responder roles" in decision.reason
    assert "policy file" in decision.reason


def test_an_empty_policy_denies_everything() -> None:
    empty = Policy(approvals={1: {"quorum": 0}})  # type: ignore[dict-item]
    assert isinstance(decide(ADMIN, ActionRequestInfo(tier=2), empty), Deny)
    assert isinstance(authorize(ADMIN, "diagnose", empty), Deny)
    assert not can_approve(ADMIN, 1, empty)


@pytest.mark.parametrize(
    ("principal", "tier", "allowed"),
    [(LEAD, 1, True), (ADMIN, 1, True), (SRE, 1, False), (ML, 1, False), (STRANGER, 3, False)],
)
def test_only_approver_roles_can_approve(
    policy: Policy, principal: Principal, tier: int, allowed: bool
) -> None:
    assert can_approve(principal, tier, policy) is allowed  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("principal", "permission", "allowed"),
    [
        (ML, "diagnose", True),
        (ML, "resolve", False),
        (ML, "undo", False),
        (SRE, "undo", True),
        (SRE, "resolve", True),
        (STRANGER, "diagnose", False),
    ],
)
def test_non_action_permissions_follow_the_role_flags(
    policy: Policy, principal: Principal, permission: str, allowed: bool
) -> None:
    decision = authorize(principal, permission, policy)  # type: ignore[arg-type]
    assert isinstance(decision, Allow) is allowed


def test_undo_needs_the_undo_flag_not_the_tier(policy: Policy) -> None:
    assert decide(SRE, ActionRequestInfo(tier=1, undo=True), policy) == Allow()
    denied = decide(LEAD, ActionRequestInfo(tier=1, undo=True), policy)
    assert isinstance(denied, Deny)
    assert "undo" in denied.reason


def test_a_channel_list_limits_where_gpunode_acts(policy: Policy) -> None:
    limited = policy.model_copy(update={"channels": ("C0INCIDENT",)})
    elsewhere = who("U0SRE00001", channel="C0RANDOM01")
    decision = decide(elsewhere, ActionRequestInfo(tier=2), limited)
    assert isinstance(decision, Deny)
    assert "not enabled in this channel" in decision.reason
    assert not can_approve(who("U0LEAD0001", "S0OPSLEADS", channel="C0RANDOM01"), 1, limited)
    assert decide(SRE, ActionRequestInfo(tier=2), limited) == Allow()


def test_quorums_are_configurable_per_tier() -> None:
    data: dict[str, Any] = {
        "roles": {"r": {"allows": [1, 2], "can_approve": [1, 2]}},
        "bindings": {"r": {"users": ["U0AAA"]}},
        "approvals": {"1": {"quorum": 2}, 2: {"quorum": 1}},
    }
    policy = parse_policy(data)
    assert decide(who("U0AAA"), ActionRequestInfo(tier=1), policy) == NeedsApproval(
        quorum=2, approver_roles=("r",)
    )
    assert decide(who("U0AAA"), ActionRequestInfo(tier=2), policy) == NeedsApproval(
        quorum=1, approver_roles=("r",)
    )
    # tier 3 was not mentioned: its default quorum (0) applies
    assert decide(who("U0AAA"), ActionRequestInfo(tier=3), policy) == Deny(
        reason="no role in the policy file allows tier 3; ask an admin to add one",
        code="no_role_allows",
        params={"what": "tier", "tier": 3},
    )


@pytest.mark.parametrize(
    ("data", "fragment"),
    [
        ({"roles": {"r": {"allows": [4]}}}, "roles.r.allows.0: Input should be 1, 2 or 3"),
        ({"roles": {"r": {"alows": [1]}}}, "roles.r.alows: Extra inputs are not permitted"),
        ({"roles": {}, "bindings": {"ghost": {}}}, "bindings.ghost: no such role"),
        (
            {"roles": {"r": {}}, "bindings": {"r": {"users": ["bob"]}}},
            "'bob' is not a Slack user id",
        ),
        (
            {"roles": {"r": {}}, "bindings": {"r": {"users": ["U0_ALICE"]}}},
            "'U0_ALICE' is not a Slack user id",
        ),
        (
            {"roles": {"r": {}}, "bindings": {"r": {"usergroups": ["U0X1"]}}},
            "not a Slack user-group id",
        ),
        (
            {"roles": {"r": {"allows": [1]}}},
            "approvals.1.quorum is 1 but no role has 1 in can_approve",
        ),
        ({"approval_ttl_s": 5}, "approval_ttl_s"),
        ([1, 2], "must be a mapping"),
    ],
)
def test_invalid_policies_name_the_bad_key(data: object, fragment: str) -> None:
    with pytest.raises(PolicyError) as caught:
        parse_policy(data, source="policy.yaml")
    assert fragment in caught.value.message
    assert caught.value.message.startswith("policy.yaml")


def test_line_numbers_are_reported_when_the_reader_knows_them() -> None:
    with pytest.raises(PolicyError, match=r"line 7: roles\.r\.allows\.0"):
        parse_policy({"roles": {"r": {"allows": [9]}}}, line_of=lambda loc: 7)
