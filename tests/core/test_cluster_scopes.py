"""Cluster names, ``[CLUSTER/]NODE`` references, the choice of cluster, and roles scoped to
clusters (an SRE of one cluster cannot act on another)."""

from __future__ import annotations

from typing import Any

import pytest

from bot.core.governance.policy import (
    ActionRequestInfo,
    Allow,
    Deny,
    NeedsApproval,
    Principal,
    authorize,
    can_approve,
    decide,
    parse_policy,
    roles_of,
)
from bot.core.model.clusters import (
    choose_cluster,
    cluster_name_problem,
    format_node_ref,
    split_node_ref,
)
from bot.errors import PolicyError, UnknownClusterError

KNOWN = ("prod-eu", "prod-us")


@pytest.mark.parametrize(
    ("name", "problem"),
    [
        ("prod-eu", None),
        ("a", None),
        ("0cluster9", None),
        ("", "cannot be empty"),
        ("Prod-EU", "did you mean prod-eu?"),
        ("prod.eu", "not a valid cluster name"),
        ("-prod", "not a valid cluster name"),
        ("prod-", "not a valid cluster name"),
        ("x" * 64, "the limit is 63"),
    ],
)
def test_cluster_names_are_dns_1123_labels(name: str, problem: str | None) -> None:
    found = cluster_name_problem(name)
    if problem is None:
        assert found is None
    else:
        assert found is not None and problem in found


@pytest.mark.parametrize(
    ("word", "expected"),
    [
        ("gpu-node-01", (None, "gpu-node-01")),
        ("prod-eu/gpu-node-01", ("prod-eu", "gpu-node-01")),
        ("prod-eu/a/b", ("prod-eu", "a/b")),
    ],
)
def test_a_node_reference_splits_at_its_first_slash(
    word: str, expected: tuple[str | None, str]
) -> None:
    assert split_node_ref(word) == expected


def test_a_one_cluster_bot_names_nodes_without_their_cluster() -> None:
    assert format_node_ref("prod-eu", "n1") == "prod-eu/n1"
    assert format_node_ref("prod-eu", "n1", show_cluster=False) == "n1"


@pytest.mark.parametrize(
    ("explicit", "channel", "expected"),
    [
        ("prod-us", "C0EU", "prod-us"),  # named: wins over the channel's default
        (None, "C0EU", "prod-eu"),  # the channel's default
        (None, "C0OTHER", "prod-us"),  # the settings' default
    ],
)
def test_the_cluster_of_a_command_is_named_else_the_channels_else_the_default(
    explicit: str | None, channel: str, expected: str
) -> None:
    chosen = choose_cluster(
        explicit,
        channel=channel,
        known=KNOWN,
        default="prod-us",
        channel_defaults={"C0EU": "prod-eu"},
    )
    assert chosen == expected


def test_an_unknown_cluster_names_the_known_ones() -> None:
    with pytest.raises(UnknownClusterError) as caught:
        choose_cluster("prod-ap", known=KNOWN, default="prod-eu")
    assert caught.value.message == (
        "no cluster named 'prod-ap'; the clusters gpunode knows are: prod-eu, prod-us"
    )


POLICY: dict[str, Any] = {
    "roles": {
        "sre-eu": {
            "allows": [1, 2, 3],
            "can_approve": [1],
            "can_diagnose": True,
            "can_undo": True,
            "can_resolve": True,
            "clusters": ["prod-eu"],
        },
        "sre-us": {
            "allows": [1, 2, 3],
            "can_approve": [1],
            "can_diagnose": True,
            "can_undo": True,
            "can_resolve": True,
            "clusters": ["prod-us"],
        },
        "lead": {"can_approve": [1], "can_diagnose": True},
    },
    "bindings": {
        "sre-eu": {"users": ["U0EU"]},
        "sre-us": {"users": ["U0US"]},
        "lead": {"users": ["U0LEAD"]},
    },
}


def who(user: str, cluster: str | None) -> Principal:
    return Principal(user_id=user, channel_id="C1", cluster=cluster)


@pytest.mark.parametrize(
    ("user", "cluster", "tier", "expected"),
    [
        ("U0EU", "prod-eu", 2, Allow()),
        ("U0US", "prod-us", 2, Allow()),
        ("U0EU", "prod-eu", 1, NeedsApproval(quorum=1, approver_roles=("lead", "sre-eu"))),
        ("U0US", "prod-us", 1, NeedsApproval(quorum=1, approver_roles=("lead", "sre-us"))),
    ],
)
def test_a_cluster_scoped_role_acts_in_its_own_cluster(
    user: str, cluster: str, tier: int, expected: object
) -> None:
    policy = parse_policy(POLICY)
    assert decide(who(user, cluster), ActionRequestInfo(tier=tier), policy) == expected  # type: ignore[arg-type]


@pytest.mark.parametrize(("tier", "undo"), [(1, False), (2, False), (3, False), (2, True)])
def test_an_sre_of_one_cluster_cannot_act_on_another_and_is_told_why(tier: int, undo: bool) -> None:
    policy = parse_policy(POLICY)
    decision = decide(who("U0EU", "prod-us"), ActionRequestInfo(tier=tier, undo=undo), policy)  # type: ignore[arg-type]
    assert decision == Deny(
        reason="this is cluster prod-us and your role does not cover it (sre-eu applies in "
        "prod-eu only); ask an admin for a role in prod-us",
        code="role_not_in_cluster",
        params={"cluster": "prod-us", "scopes": [{"role": "sre-eu", "clusters": ["prod-eu"]}]},
    )


def test_approving_resolving_and_diagnosing_are_scoped_to_the_roles_clusters() -> None:
    policy = parse_policy(POLICY)
    assert can_approve(who("U0EU", "prod-eu"), 1, policy)
    assert not can_approve(who("U0EU", "prod-us"), 1, policy)
    assert can_approve(who("U0LEAD", "prod-us"), 1, policy)  # an unscoped role: everywhere
    assert authorize(who("U0US", "prod-us"), "resolve", policy) == Allow()
    refused = authorize(who("U0US", "prod-eu"), "diagnose", policy)
    assert isinstance(refused, Deny) and "this is cluster prod-eu" in refused.reason
    refused_view = authorize(who("U0US", "prod-eu"), "view", policy)
    assert (
        isinstance(refused_view, Deny) and "sre-us applies in prod-us only" in refused_view.reason
    )


def test_with_no_cluster_in_question_every_bound_role_counts() -> None:
    policy = parse_policy(POLICY)
    assert roles_of(who("U0EU", None), policy) == ["sre-eu"]
    assert authorize(who("U0EU", None), "view", policy) == Allow()


def test_a_role_scoped_to_a_malformed_cluster_name_is_refused_at_load() -> None:
    bad = {"roles": {"sre": {"allows": [2], "clusters": ["Prod_EU"]}}}
    with pytest.raises(
        PolicyError, match=r"roles\.sre\.clusters: .Prod_EU. is not a valid cluster name"
    ):
        parse_policy(bad)
