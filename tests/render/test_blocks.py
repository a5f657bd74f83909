"""What a diagnosis shows in Slack (the brief message and the Details modal) is valid Block
Kit within Slack's limits, escapes every name taken from the cluster, and says what it cut."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

import pytest

from bot.core.diagnosis.findings import Diagnosis
from bot.core.model.evidence import EvidenceBundle
from bot.render.blocks import VIEW_BLOCKS, details_view, diagnosis_messages
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


def _details(d: Diagnosis, bundle: EvidenceBundle | None = None, **kw: Any) -> list[Any]:
    """The Details modal's blocks, checked against a modal's limits."""
    kw.setdefault("locale", "en")
    view = details_view(d, bundle, incident=kw.pop("incident", "INC-0001"), **kw)
    validate_blocks(view["blocks"], surface="modal")
    blocks: list[Any] = view["blocks"]
    return blocks


def test_the_brief_message_and_the_details_are_valid_block_kit(
    seed_diagnosis: Diagnosis, seed_bundle: EvidenceBundle
) -> None:
    [(text, blocks)] = diagnosis_messages(
        seed_diagnosis, seed_bundle, incident="INC-0001", locale="en"
    )
    assert text
    validate_blocks(blocks)
    assert _details(seed_diagnosis, seed_bundle)


def test_hostile_names_are_escaped_in_every_mrkdwn_text(hostile_diagnosis: Diagnosis) -> None:
    [(text, brief)] = diagnosis_messages(hostile_diagnosis, incident="INC-0001", locale="en")
    validate_blocks(brief)
    details = _details(hostile_diagnosis)
    for t in [*_texts(brief), *_texts(details), text]:
        assert "<!channel>" not in t
        assert "a&b" not in t and "<c>" not in t
        # every '<' left is one of ours (a mention we built), never from the data
        assert not re.search(r"<(?![@#])", t)
    assert "a&amp;b&lt;c&gt;" in "\n".join(_texts(details))


def test_an_oversized_diagnosis_stays_within_a_modals_limits_and_points_to_the_report(
    diagnosis_factory: Callable[..., Diagnosis],
) -> None:
    pods = [(f"team-{i % 7}/worker-{i:03d}-" + "x" * 40, (300 - i) * GiB // 4) for i in range(300)]
    big = diagnosis_factory(pods=pods, n_findings=3000)
    [(_text, brief)] = diagnosis_messages(big, incident="INC-0042", locale="en")
    validate_blocks(brief)
    details = _details(big, incident="INC-0042")
    assert len(details) == VIEW_BLOCKS  # cut to a modal's 100 blocks, with a pointer
    assert "/gpunode timeline INC-0042" in json.dumps(details)
    assert "…and 290 more pods" in json.dumps(details, ensure_ascii=False)


def test_tier_buttons_carry_incident_and_plan_id(seed_diagnosis: Diagnosis) -> None:
    [(_text, blocks)] = diagnosis_messages(seed_diagnosis, incident="INC-0007", locale="en")
    [actions] = [b for b in blocks if b["type"] == "actions"]
    tiers = [b for b in actions["elements"] if b["action_id"].startswith("gpunode_tier")]
    assert [b["action_id"] for b in tiers] == ["gpunode_tier1", "gpunode_tier2", "gpunode_tier3"]
    for b, plan in zip(tiers, seed_diagnosis.plans, strict=True):
        assert json.loads(b["value"]) == {"incident": "INC-0007", "plan_id": plan.plan_id}
        assert b["style"] in ("primary", "danger")


def test_an_unavailable_plan_gets_no_button_and_the_details_say_why(
    seed_diagnosis: Diagnosis,
) -> None:
    plans = [
        p.model_copy(update={"available": False}) if p.tier == 2 else p
        for p in seed_diagnosis.plans
    ]
    d = seed_diagnosis.model_copy(update={"plans": plans})
    [(_text, blocks)] = diagnosis_messages(d, incident="INC-1", locale="en")
    ids = [e["action_id"] for b in blocks if b["type"] == "actions" for e in b["elements"]]
    assert [i for i in ids if i.startswith("gpunode_tier")] == ["gpunode_tier1", "gpunode_tier3"]
    assert "Not available" in json.dumps(_details(d, incident="INC-1"))


def test_talking_points_show_numbers_with_sources_and_mark_unverified_points(
    seed_diagnosis: Diagnosis,
) -> None:
    joined = "\n".join(_texts(_details(seed_diagnosis)))
    assert "62.0 GiB working set (cgroup:/kubepods/burstable/pod-0/" in joined
    assert "_unverified_" in joined
    assert "*For the AI/ML team*" in joined and "*For the Ops team*" in joined


def test_the_ledger_is_drawn_as_a_bar_with_a_legend(seed_diagnosis: Diagnosis) -> None:
    ledger = next(t for t in _texts(_details(seed_diagnosis)) if t.startswith("*Host memory*"))
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
    text = next(t for t in _texts(_details(d)) if t.startswith("*Host memory*"))
    assert expected in text and absent not in text and "-187" not in text


def test_top_pods_say_what_their_figure_is_and_drop_the_per_line_suffix(
    seed_diagnosis: Diagnosis,
) -> None:
    pods = next(t for t in _texts(_details(seed_diagnosis)) if t.startswith("*Top pods"))
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
        locale="en",
    )
    validate_blocks(blocks)
    assert "&lt;!channel&gt;" in text and "<!channel>" not in json.dumps(blocks)
