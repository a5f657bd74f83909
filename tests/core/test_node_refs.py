"""``NodeRef`` names one node in one cluster, both always set; a mention in an incident
thread is read with the slash command's grammar, the thread's incident filling the gaps."""

from __future__ import annotations

import contextlib

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from bot.core.governance.commands import (
    Diagnose,
    Prevent,
    Status,
    Timeline,
    Top,
    canonical,
    parse,
    parse_in_thread,
)
from bot.core.model.clusters import NodeRef
from bot.errors import UsageError

AT = NodeRef(cluster="prod-eu", node="gpu-node-01")


def test_a_node_ref_reads_cluster_slash_node_and_drops_the_cluster_for_one_cluster() -> None:
    assert str(AT) == "prod-eu/gpu-node-01"
    assert AT.label(show_cluster=False) == "gpu-node-01"


@pytest.mark.parametrize(
    ("cluster", "node"), [("", "gpu-1"), ("Prod", "gpu-1"), ("prod", ""), ("prod", "a/b")]
)
def test_a_node_ref_needs_a_cluster_name_and_a_node(cluster: str, node: str) -> None:
    with pytest.raises(ValidationError):
        NodeRef(cluster=cluster, node=node)


def test_a_node_ref_is_frozen_and_keys_a_dict() -> None:
    with pytest.raises(ValidationError):
        AT.node = "other"  # type: ignore[misc]
    assert {AT: 1}[NodeRef(cluster="prod-eu", node="gpu-node-01")] == 1


@pytest.mark.parametrize(
    ("text", "command"),
    [
        ("<@U0GPUNODE>", Status(node="gpu-node-01", cluster="prod-eu")),
        ("<@U0GPUNODE> diagnose", Diagnose(node="gpu-node-01", cluster="prod-eu")),
        ("<@U0GPUNODE|gpunode> prevent", Prevent(node="gpu-node-01", cluster="prod-eu")),
        ("<@U0GPUNODE> status", Status(node="gpu-node-01", cluster="prod-eu")),
        ("<@U0GPUNODE> timeline", Timeline(incident="INC-0007")),
        ("<@U0GPUNODE> top", Top()),
        ("<@U0GPUNODE> diagnose prod-us/gpu-2", Diagnose(node="gpu-2", cluster="prod-us")),
        ("hey <@U0GPUNODE> TIMELINE 3", Timeline(incident="INC-0003")),
    ],
)
def test_a_mention_is_a_command_with_the_threads_incident_filling_the_gaps(
    text: str, command: object
) -> None:
    assert (
        parse_in_thread(text, at=AT, incident="INC-0007", clusters=("prod-eu", "prod-us"))
        == command
    )


@pytest.mark.parametrize("text", ["<@U0GPUNODE> please diagnose", "<@U0GPUNODE> diagnose a b"])
def test_a_mention_that_is_no_command_gets_the_grammars_usage_error(text: str) -> None:
    with pytest.raises(UsageError):
        parse_in_thread(text, at=AT, incident="INC-0007")


@given(st.text(max_size=80))
def test_a_mention_raises_nothing_but_a_usage_error(text: str) -> None:
    with contextlib.suppress(UsageError):
        parse_in_thread(text, at=AT, incident="INC-0007")


@pytest.mark.parametrize(
    ("typed", "shown"),
    [
        ("diagnose gpu-1", "diagnose gpu-1"),
        ("diagnose prod-eu/gpu-1", "diagnose prod-eu/gpu-1"),
        ("top prod-eu", "top prod-eu"),
        ("resolve 7 it was the cache", "resolve INC-0007"),
        ("status gpu-1", "status"),
    ],
)
def test_the_canonical_command_shows_only_validated_words(typed: str, shown: str) -> None:
    assert canonical(parse(typed)) == shown
