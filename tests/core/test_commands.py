from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bot.core.governance.commands import (
    VERBS,
    Diagnose,
    Help,
    Prevent,
    Resolve,
    Status,
    Timeline,
    Top,
    closest_verb,
    help_text,
    parse,
    usage,
)
from bot.errors import UsageError


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("diagnose gpu-node-01", Diagnose(node="gpu-node-01")),
        ("  DIAGNOSE   gpu-node-01  ", Diagnose(node="gpu-node-01")),
        ("diagnose ip-10-0-1-5.ec2.internal", Diagnose(node="ip-10-0-1-5.ec2.internal")),
        ("prevent gpu-node-01", Prevent(node="gpu-node-01")),
        ("prevent prod-us/gpu-node-01", Prevent(node="gpu-node-01", cluster="prod-us")),
        ("Prevent ip-10-0-1-5.ec2.internal", Prevent(node="ip-10-0-1-5.ec2.internal")),
        ("help prevent", Help(topic="prevent")),
        ("status", Status()),
        ("status gpu-node-02", Status(node="gpu-node-02")),
        ("top", Top()),
        ("top prod-eu", Top(cluster="prod-eu")),
        ("diagnose prod-eu/gpu-node-01", Diagnose(cluster="prod-eu", node="gpu-node-01")),
        ("status prod-us/gpu-node-02", Status(cluster="prod-us", node="gpu-node-02")),
        ("timeline", Timeline()),
        ("timeline INC-0007", Timeline(incident="INC-0007")),
        ("timeline inc-7", Timeline(incident="INC-0007")),
        ("timeline 7", Timeline(incident="INC-0007")),
        ("timeline #12345", Timeline(incident="INC-12345")),
        ("resolve INC-0003", Resolve(incident="INC-0003")),
        (
            "resolve 3 memory freed after eviction",
            Resolve(incident="INC-0003", note="memory freed after eviction"),
        ),
        ("help", Help()),
        ("", Help()),
        ("help diagnose", Help(topic="diagnose")),
    ],
)
def test_valid_commands_parse_to_their_model(text: str, expected: object) -> None:
    assert parse(text) == expected


@pytest.mark.parametrize(
    ("text", "fragment", "usage_fragment"),
    [
        ("diagnose", "needs a node name", "diagnose [CLUSTER/]NODE"),
        ("diagnose a b", "unexpected: b", "diagnose [CLUSTER/]NODE"),
        ("diagnose GPU-node-01", "did you mean gpu-node-01", "diagnose [CLUSTER/]NODE"),
        ("diagnose gpu_node", "not a valid node name", "diagnose [CLUSTER/]NODE"),
        ("diagnose -gpu", "not a valid node name", "diagnose [CLUSTER/]NODE"),
        ("diagnose " + "a" * 254, "limit is 253", "diagnose [CLUSTER/]NODE"),
        ("top now later", "unexpected: later", "top [CLUSTER]"),
        ("status a b", "unexpected: b", "status [[CLUSTER/]NODE]"),
        ("prevent", "needs a node name", "prevent [CLUSTER/]NODE"),
        ("prevent a b", "unexpected: b", "prevent [CLUSTER/]NODE"),
        ("prevent GPU-node-01", "did you mean gpu-node-01", "prevent [CLUSTER/]NODE"),
        ("prevnt gpu-node-01", "did you mean prevent?", "prevent [CLUSTER/]NODE"),
        ("timeline INC-abc", "not an incident id", "timeline [INCIDENT]"),
        ("timeline 0", "not an incident id", "timeline [INCIDENT]"),
        ("resolve", "needs an incident id", "resolve INCIDENT"),
        ("resolve gpu-node-01", "not an incident id", "resolve INCIDENT"),
        ("diagnoes gpu-node-01", "did you mean diagnose?", "help [COMMAND]"),
        ("stat", "did you mean status?", "help [COMMAND]"),
        ("help nope", "no command", "help [COMMAND]"),
    ],
)
def test_malformed_commands_raise_usage_error_with_the_usage_line(
    text: str, fragment: str, usage_fragment: str
) -> None:
    with pytest.raises(UsageError) as caught:
        parse(text)
    assert fragment in caught.value.message
    assert usage_fragment in caught.value.usage


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("diagnose Prod-EU/gpu-node-01", "cluster names are lowercase: did you mean prod-eu?"),
        ("diagnose prod.eu/gpu-node-01", "not a valid cluster name"),
        ("diagnose /gpu-node-01", "a cluster name cannot be empty"),
        ("diagnose prod-eu/", "names a cluster but no node"),
        ("diagnose prod-eu/a/b", "not a valid node name"),
        ("diagnose " + "c" * 64 + "/n1", "the limit is 63"),
        ("diagnose prod-eu/GPU-1", "node names are lowercase"),
        ("top -eu", "not a valid cluster name"),
    ],
)
def test_malformed_cluster_references_are_refused_saying_what_is_wrong(
    text: str, fragment: str
) -> None:
    with pytest.raises(UsageError) as caught:
        parse(text)
    assert fragment in caught.value.message


@pytest.mark.parametrize(
    "text", ["diagnose prod-ap/gpu-node-01", "status prod-ap/gpu-node-01", "top prod-ap"]
)
def test_an_unknown_cluster_is_refused_naming_the_known_ones(text: str) -> None:
    with pytest.raises(UsageError) as caught:
        parse(text, clusters=("prod-us", "prod-eu"))
    assert caught.value.message == (
        "no cluster named 'prod-ap'; the known clusters are: prod-eu, prod-us"
    )


def test_a_known_cluster_parses_when_the_clusters_are_given() -> None:
    parsed = parse("diagnose prod-eu/gpu-node-01", clusters=("prod-eu", "prod-us"))
    assert parsed == Diagnose(cluster="prod-eu", node="gpu-node-01")


def test_a_word_far_from_every_verb_gets_no_suggestion() -> None:
    assert closest_verb("xylophone") is None
    with pytest.raises(UsageError) as caught:
        parse("xylophone")
    assert "did you mean" not in caught.value.message


def test_node_names_of_exactly_253_characters_are_accepted() -> None:
    name = ".".join(["a" * 63] * 4)[:253]
    assert len(name) == 253
    assert parse(f"diagnose {name}") == Diagnose(node=name)


def test_help_lists_every_verb_with_the_given_prog() -> None:
    text = help_text(prog="gpunode")
    for verb in VERBS:
        assert usage(verb, prog="gpunode") in text
    assert "/gpunode" not in text


def test_usage_errors_use_the_callers_prog() -> None:
    with pytest.raises(UsageError) as caught:
        parse("diagnose", prog="gpunode")
    assert caught.value.usage == "gpunode diagnose [CLUSTER/]NODE"


@given(st.text(max_size=300))
def test_parse_raises_only_usage_error_on_arbitrary_text(text: str) -> None:
    try:
        parse(text)
    except UsageError as err:
        assert err.message
        assert err.usage


@given(
    st.sampled_from(VERBS),
    st.lists(
        st.text(alphabet=st.characters(blacklist_categories=["Zs", "Cc"]), min_size=1), max_size=4
    ),
)
def test_parse_raises_only_usage_error_on_known_verbs_with_arbitrary_arguments(
    verb: str, args: list[str]
) -> None:
    try:
        parse(" ".join([verb, *args]))
    except UsageError as err:
        assert err.usage
