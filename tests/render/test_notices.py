"""Wording of the short notices that depend on who or what they are about."""

from __future__ import annotations

import pytest

from bot.services.operations import NodeRank
from bot.slack.blockkit import validate_blocks
from tests.render.told import render_notice, render_refusal


def _body(blocks: list[dict[str, object]]) -> str:
    return str(blocks[0]["text"]["text"])  # type: ignore[index]


def test_top_nodes_renders_noderank_rows_unchanged() -> None:
    rows = [
        NodeRank("gpu-node-01", True, 99, 85, 92, 1184.0, "default").__dict__,
        NodeRank("gpu-<b>", False, None, None, None, 0.0, "default").__dict__,
    ]
    _text, blocks = render_notice("top_nodes", rows=rows)
    validate_blocks(blocks)
    lines = _body(blocks).split("\n")
    header = next(line for line in lines if line.startswith("NODE"))
    assert header.split() == ["NODE", "PRESSURE", "USED", "LIMITS", "REQUESTS"]
    assert next(line for line in lines if "gpu-node-01" in line).split() == [
        "gpu-node-01",
        "yes",
        "92%",
        "99%",
        "85%",
    ]
    assert next(line for line in lines if "gpu-&lt;b&gt;" in line).split()[1:] == [
        "no",
        "n/a",
        "n/a",
        "n/a",
    ]
    assert "metrics.k8s.io" in _body(blocks)


@pytest.mark.parametrize(
    ("user", "present", "absent"),
    [
        ("gpunode", "after the action", "<@"),
        ("alertmanager", "An alert", "<@"),
        ("U0BOB", "<@U0BOB>'s diagnosis", "gpunode's"),
    ],
)
def test_a_joined_diagnosis_mentions_only_people(user: str, present: str, absent: str) -> None:
    _text, blocks = render_notice("diagnose_joined", node="gpu-node-01", user=user)
    body = _body(blocks)
    assert present in body and absent not in body


@pytest.mark.parametrize(
    ("user", "present", "absent"),
    [("U0BOB", "<@U0BOB>'s request joins it", "this request"), ("gpunode", "this request", "<@")],
)
def test_joining_a_running_diagnosis_says_so(user: str, present: str, absent: str) -> None:
    _text, blocks = render_notice("diagnose_joined_running", node="gpu-node-01", user=user)
    validate_blocks(blocks)
    body = _body(blocks)
    assert "already running" in body and present in body and absent not in body


@pytest.mark.parametrize(
    ("note", "kept"),
    [
        ("restarted at 10:30:00 UTC", "10:30:00"),
        ("see snake_case_name and U0BOB", "snake_case_name and U0BOB"),
        ("ratio 3:100: fine", "3:100:"),
        ("a*b*c stays", "a*b*c"),
    ],
)
def test_the_plain_fallback_keeps_mentions_times_and_inner_underscores(
    note: str, kept: str
) -> None:
    text, _ = render_notice("resolved", incident_id="INC-0001", by="U0ALICE", note=note)

    assert "<@U0ALICE>" in text
    assert kept in text
    assert ":white_check_mark:" not in text and "*INC-0001*" not in text


def test_the_plain_fallback_drops_emphasis_and_emoji_but_keeps_escapes() -> None:
    text, _ = render_notice("resolved", incident_id="INC-0001", by="U0ALICE", note="<!channel> _x_")

    assert text == "INC-0001 resolved by <@U0ALICE>: &lt;!channel&gt; x."


def test_a_refusal_shows_a_mention_not_its_escaped_text() -> None:
    text, blocks = render_refusal("not_the_requester", requester="U0ALICE")
    body = _body(blocks)

    assert "<@U0ALICE>" in body and "&lt;@U0ALICE&gt;" not in body
    assert "<@U0ALICE>" in text


def test_a_refusals_parameters_are_escaped() -> None:
    hostile = "<!channel> <https://x|y> <@U0BOB>"
    _, blocks = render_refusal("undo_conflict", reason="target_gone", target=hostile)
    body = _body(blocks)

    assert "&lt;!channel&gt;" in body and "&lt;https://x|y&gt;" in body
    assert "<@U0BOB>" not in body
