"""Who a tier action goes out as: the person's identity, or - with
impersonation off - the bot; never the bot's rights for an unmapped person."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, cast

import pytest

from bot.core.governance.policy import parse_policy
from bot.errors import PolicyError
from bot.services.acting import ActConfig, ActDeps, ActPorts

ROLES = {"responder": {"allows": [1, 2, 3], "can_approve": [1], "can_undo": True}}
BINDINGS = {"responder": {"users": ["U0ALICE", "U0LIWEI"]}}


def _deps(**impersonation: Any) -> ActDeps:
    policy = parse_policy({"roles": ROLES, "bindings": BINDINGS, "impersonation": impersonation})
    unused = cast(Any, None)
    return ActDeps(
        ports=ActPorts(store=unused, chat=unused, thread=unused),
        config=ActConfig(
            clock=lambda: datetime(2026, 1, 1, tzinfo=UTC),
            new_id=lambda: "x",
            replica_id="r",
            evidence_max_age_s=60,
            approval_ttl_s=900,
        ),
        policy=policy,
        clusters=unused,
        diagnose=unused,
        bg=unused,
        cluster="default",
    )


def test_with_impersonation_off_the_bot_acts() -> None:
    assert _deps().acting("U0ALICE") is None


def test_a_mapped_person_acts_as_themselves_with_the_approvers() -> None:
    deps = _deps(enabled=True, users={"U0ALICE": {"user": "alice", "groups": ["g"]}})
    acting = deps.acting("U0ALICE", approvers=("U0BOB",), action_id="a1")
    assert acting is not None and (acting.user, acting.groups) == ("alice", ("g",))
    assert acting.extra_values("gpunode.io/approved-by") == ("U0BOB",)


def test_an_unmapped_person_never_falls_back_to_the_bots_rights() -> None:
    deps = _deps(enabled=True, users={"U0ALICE": {"user": "alice"}})
    with pytest.raises(PolicyError, match="maps no Kubernetes identity to U0LIWEI"):
        deps.acting("U0LIWEI")
