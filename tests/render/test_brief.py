"""The brief first message of a diagnosis and its Details, on the fixture
scenarios analysed by the real ``analyze``."""

from __future__ import annotations

import json
from typing import Any

from bot.core.remedies.recommendations import recommended_plan
from bot.render.blocks import (
    DETAILS_ACTION,
    block_text_size,
    details_view,
    diagnosis_messages,
    headline,
    talking_points_message,
)
from bot.render.views import GpuLine, build_view, gpu_groups
from bot.slack.blockkit import validate_blocks
from tests.render.test_golden import load

#: the first message's budget (the console test measures the rendered lines)
BUDGET_CHARS = 1500


def _buttons(blocks: list[dict[str, Any]]) -> list[str]:
    return [e["action_id"] for b in blocks if b["type"] == "actions" for e in b["elements"]]


def test_a_diagnosis_posts_one_message_within_the_character_budget() -> None:
    d, bundle = load("seed")
    [(text, blocks)] = diagnosis_messages(d, bundle, incident="INC-0001", locale="en")
    validate_blocks(blocks)
    assert block_text_size(blocks) <= BUDGET_CHARS
    assert text and len(blocks) <= 5


def test_the_brief_message_carries_the_verdict_a_number_per_team_the_tier_and_the_buttons() -> None:
    d, bundle = load("seed")
    [(_, blocks)] = diagnosis_messages(d, bundle, incident="INC-0001", locale="en")
    body = blocks[1]["text"]["text"]
    assert body.startswith("*Verdict* (high confidence): host memory exhausted by a workload")
    assert "`ml/preprocess-7d9f8c6b5-x2k4q`" in body
    assert "*AI/ML team*" in body and "64.0 GiB fullest GPU used" in body
    assert "*Ops team*" in body and "3.5 GiB MemAvailable _(procfs:/proc/meminfo)_" in body
    assert "*Recommended: Tier 3* → `Deployment/ml/preprocess`" in body
    assert "frees about 24.0 GiB of the 21.6 GiB the node is short" in body
    assert _buttons(blocks) == [
        "gpunode_tier1",
        "gpunode_tier2",
        "gpunode_tier3",
        DETAILS_ACTION,
        "gpunode_prevention",
    ]


def test_a_tier_that_does_not_relieve_the_shortage_is_not_recommended() -> None:
    d, _bundle = load("seed")
    plans = [p.model_copy(update={"relieves": False}) for p in d.plans]
    assert recommended_plan(d.plans) is not None
    assert recommended_plan(d.plans).tier == 3  # type: ignore[union-attr]
    assert recommended_plan(plans) is None


def test_the_reversible_plan_is_recommended_over_the_irreversible_one() -> None:
    d, _bundle = load("seed")
    tier1 = next(p for p in d.plans if p.tier == 1)
    tier3 = next(p for p in d.plans if p.tier == 3)
    assert tier1.relieves and tier3.relieves and not tier1.reversible
    assert recommended_plan([tier1, tier3]) == tier3
    assert recommended_plan([tier1]) == tier1


def test_a_healthy_node_says_there_is_nothing_to_do_and_offers_no_tier() -> None:
    d, bundle = load("healthy")
    [(_, blocks)] = diagnosis_messages(d, bundle, incident="INC-0001", locale="en")
    assert "Nothing to do" in blocks[1]["text"]["text"]
    assert _buttons(blocks) == [DETAILS_ACTION, "gpunode_prevention"]


def test_identical_gpus_collapse_to_one_line_and_a_different_one_stands_alone() -> None:
    same = [GpuLine(i, "H100", f"u{i}", 64, 80, 80.0, 1) for i in range(8)]
    odd = GpuLine(8, "H100", "u8", 10, 80, 12.5, 1)
    groups = gpu_groups([*same, odd])
    assert [(g.first, g.last) for g in groups] == [(0, 7), (8, 8)]
    d, bundle = load("seed")
    view = details_view(d, bundle, incident="INC-0001", locale="en")
    gpu_text = [
        b["text"]["text"] for b in view["blocks"] if "GPU 0–7" in b.get("text", {}).get("text", "")
    ]
    assert gpu_text and "64.0 GiB / 80.0 GiB each (80%)" in gpu_text[0]


def test_each_talking_point_shows_one_number_and_its_source() -> None:
    d, bundle = load("seed")
    _, blocks = talking_points_message(build_view(d, bundle), locale="en")
    contexts = [b for b in blocks if b["type"] == "context"]
    points = [b for b in blocks if b["type"] == "section" and b["text"]["text"][:1] == ":"]
    assert len(contexts) == len(points)
    for c in contexts:
        text = c["elements"][0]["text"]
        assert " · " not in text and text.endswith(")")


def test_the_details_modal_has_every_section_within_a_modals_limits() -> None:
    d, bundle = load("seed")
    view = details_view(d, bundle, incident="INC-0001", locale="en")
    validate_blocks(view["blocks"], surface="modal")
    heads = [b["text"]["text"] for b in view["blocks"] if b["type"] == "header"]
    assert heads == [
        "Evidence",
        "Talking points",
        "Every number cited, once",
        "Findings",
        "GPUs",
        "Processes",
        "Mitigation tiers",
    ]
    assert len(json.dumps(view)) < 250_000 and len(view["title"]["text"]) <= 24


def test_every_number_cited_is_listed_once() -> None:
    d, bundle = load("seed")
    view = details_view(d, bundle, incident="INC-0001", locale="en")
    i = next(
        i
        for i, b in enumerate(view["blocks"])
        if b.get("text", {}).get("text") == "Every number cited, once"
    )
    lines = view["blocks"][i + 1]["text"]["text"].splitlines()
    assert len(lines) == len(set(lines))
    assert any(line.startswith("62.0 GiB working set") for line in lines)


def test_a_headline_is_the_clause_before_the_first_colon_outside_code() -> None:
    assert (
        headline("Your GPU memory is not the problem: 8 of 8")
        == "Your GPU memory is not the problem"
    )
    assert headline("`k8s: x` is fine: yes") == "`k8s: x` is fine"
    assert headline("no colon here") == ""
    assert headline("x" * 120 + ": late") == ""
