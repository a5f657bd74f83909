from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

import pytest

from bot.core.diagnosis.findings import Diagnosis
from bot.core.model.evidence import EvidenceBundle
from bot.render.blocks import MAX_BLOCKS, full_messages
from bot.render.messages import render_root
from bot.render.notices import NOTICE_KEYS
from bot.slack.blockkit import validate_blocks
from tests.render.told import render_notice

GiB = 1024**3


def _texts(value: Any, *, mrkdwn_only: bool = True) -> list[str]:
    """Every text string in a block tree (mrkdwn objects only, by default)."""
    out: list[str] = []
    if isinstance(value, dict):
        if isinstance(value.get("text"), str) and (
            not mrkdwn_only or value.get("type") == "mrkdwn"
        ):
            out.append(value["text"])
        for v in value.values():
            out += _texts(v, mrkdwn_only=mrkdwn_only)
    elif isinstance(value, list):
        for v in value:
            out += _texts(v, mrkdwn_only=mrkdwn_only)
    return out


def test_the_three_messages_are_valid_block_kit(
    seed_diagnosis: Diagnosis, seed_bundle: EvidenceBundle
) -> None:
    messages = full_messages(seed_diagnosis, seed_bundle, incident="INC-0001")
    assert len(messages) == 3
    for text, blocks in messages:
        assert text
        validate_blocks(blocks)


def test_hostile_names_are_escaped_in_every_mrkdwn_text(hostile_diagnosis: Diagnosis) -> None:
    for text, blocks in full_messages(hostile_diagnosis, incident="INC-0001"):
        validate_blocks(blocks)
        for t in [*_texts(blocks), text]:
            assert "<!channel>" not in t
            assert "a&b" not in t and "<c>" not in t
            # every '<' left is one of ours (a mention we built), never from the data
            assert not re.search(r"<(?![@#])", t)
        joined = "\n".join(_texts(blocks))
        assert "&lt;!channel&gt;" in joined or "gpunode" in joined
    evidence = full_messages(hostile_diagnosis)[0][1]
    assert "a&amp;b&lt;c&gt;" in "\n".join(_texts(evidence))


def test_an_oversized_diagnosis_stays_within_slack_limits_and_points_to_the_report(
    diagnosis_factory: Callable[..., Diagnosis],
) -> None:
    pods = [(f"team-{i % 7}/worker-{i:03d}-" + "x" * 40, (300 - i) * GiB // 4) for i in range(300)]
    big = diagnosis_factory(pods=pods, n_findings=300)
    for _text, blocks in full_messages(big, incident="INC-0042"):
        validate_blocks(blocks)
        assert len(blocks) <= MAX_BLOCKS
    evidence = full_messages(big, incident="INC-0042")[0][1]
    assert "/gpunode timeline INC-0042" in json.dumps(evidence)
    assert "…and 290 more pods" in json.dumps(evidence, ensure_ascii=False)


def test_tier_buttons_carry_incident_and_plan_id(seed_diagnosis: Diagnosis) -> None:
    _text, blocks = full_messages(seed_diagnosis, incident="INC-0007")[2]
    actions = [b for b in blocks if b["type"] == "actions"]
    assert len(actions) == 1
    buttons = actions[0]["elements"]
    assert [b["action_id"] for b in buttons] == ["gpunode_tier1", "gpunode_tier2", "gpunode_tier3"]
    for b, plan in zip(buttons, seed_diagnosis.plans, strict=True):
        assert json.loads(b["value"]) == {"incident": "INC-0007", "plan_id": plan.plan_id}
        assert b["style"] in ("primary", "danger")


def test_an_unavailable_plan_gets_no_button(seed_diagnosis: Diagnosis) -> None:
    plans = [
        p.model_copy(update={"available": False}) if p.tier == 2 else p
        for p in seed_diagnosis.plans
    ]
    d = seed_diagnosis.model_copy(update={"plans": plans})
    _text, blocks = full_messages(d, incident="INC-1")[2]
    ids = [e["action_id"] for b in blocks if b["type"] == "actions" for e in b["elements"]]
    assert ids == ["gpunode_tier1", "gpunode_tier3"]
    assert "Not available" in json.dumps(blocks)


def test_talking_points_show_numbers_with_sources_and_mark_unverified_points(
    seed_diagnosis: Diagnosis,
) -> None:
    _text, blocks = full_messages(seed_diagnosis)[1]
    joined = "\n".join(_texts(blocks))
    assert "62.0 GiB working set (cgroup:/kubepods/burstable/pod-0/" in joined
    assert "_unverified_" in joined
    assert "*For the AI/ML team*" in joined and "*For the Ops team*" in joined


def test_the_ledger_is_drawn_as_a_bar_with_a_legend(seed_diagnosis: Diagnosis) -> None:
    _text, blocks = full_messages(seed_diagnosis)[0]
    ledger = next(t for t in _texts(blocks) if t.startswith("*Host memory*"))
    bar = re.search(r"```(.+)```", ledger)
    assert bar is not None and len(bar.group(1)) == 40
    assert "█ pods 124.0 GiB" in ledger and "▒ kernel 44.0 GiB" in ledger


@pytest.mark.parametrize(
    ("residual", "expected", "absent"),
    [
        (-187 * 1024**2, "add up to 187.0 MiB more than MemTotal", "Unexplained"),
        (GiB, "Unexplained by the parts: 1.0 GiB", "more than MemTotal"),
    ],
)
def test_the_residual_is_worded_by_its_sign(
    seed_diagnosis: Diagnosis, residual: int, expected: str, absent: str
) -> None:
    ledger = seed_diagnosis.ledger.model_copy(update={"residual_bytes": residual})
    d = seed_diagnosis.model_copy(update={"ledger": ledger})
    text = next(t for t in _texts(full_messages(d)[0][1]) if t.startswith("*Host memory*"))
    assert expected in text and absent not in text and "-187" not in text


def test_top_pods_say_what_their_figure_is_and_drop_the_per_line_suffix(
    seed_diagnosis: Diagnosis,
) -> None:
    pods = next(t for t in _texts(full_messages(seed_diagnosis)[0][1]) if t.startswith("*Top pods"))
    assert pods.startswith("*Top pods by working set*") and "usage − inactive file" in pods
    assert "(working set)" not in pods


def test_notices_and_root_are_valid_and_escape_their_params() -> None:
    params: dict[str, Any] = {
        "node": "<!channel>",
        "user": "U1",
        "reason": "a&b<c>",
        "code": "job_failed",
        "what_to_do": "retry",
        "known_nodes": ["gpu-node-01"],
        "message": "<!here>",
        "usage": "/gpunode diagnose NODE",
        "text": "help",
        "incidents": [],
        "rows": [],
        "alertname": "X",
        "incident_id": "INC-1",
        "by": "U2",
        "note": "<b>",
        "channel": "C1",
        "skipped": [{"node": "<!channel>", "alertname": "<!here>", "cap": "per_node"}],
        "per_request": 3,
        "per_node": 1,
        "per_window": 10,
        "window_s": 600,
        "command": "<!channel>",
        "problem": "a&b<c>",
    }
    for key in NOTICE_KEYS:
        text, blocks = render_notice(key, **params)
        validate_blocks(blocks)
        for t in [text, *_texts(blocks)]:
            assert "<!channel>" not in t and "<!here>" not in t and "a&b" not in t
    text, blocks = render_root(
        incident_id="INC-1",
        node="<!channel>",
        state="investigating",
        headline="",
        opened_by="U1",
        progress="Job running",
    )
    validate_blocks(blocks)
    assert "&lt;!channel&gt;" in text and "<!channel>" not in json.dumps(blocks)
