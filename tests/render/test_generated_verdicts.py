"""Every verdict class the generator plants renders in every format without a fallback
sentence, and the Block Kit stays within Slack's limits."""

from __future__ import annotations

import random
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "core"))
from bot.core.reporting.analysis import analyze
from bot.render.blocks import diagnosis_messages
from bot.render.markdown import render_report_markdown
from bot.render.sentences import sentence
from bot.render.text import render_report_text
from bot.slack.blockkit import validate_blocks
from tests.core.generating import AT, CLASSES, plant


@pytest.mark.parametrize("cls", CLASSES)
def test_each_generated_verdict_renders_every_sentence_without_fallback(cls: str) -> None:
    planted = plant(cls, random.Random(21))
    d = analyze(planted.bundle, planted.view, now=AT)
    v = d.verdict
    sentence("verdicts", v.cause, v.params, fmt="text", subject=v.subject, strict=True, locale="en")
    for tp in d.talking_points:
        sentence("talking_points", tp.key, tp.params, fmt="mrkdwn", strict=True, locale="en")
    for plan in d.plans:
        for w in plan.warnings:
            sentence("warnings", w, {}, fmt="text", strict=True, locale="en")
    for _text, blocks in diagnosis_messages(d, planted.bundle, incident="INC-0001", locale="en"):
        validate_blocks(blocks)
    report = render_report_markdown(d, planted.bundle, locale="en")
    assert "inconclusive" not in report.split("## ", 2)[1] or cls == "inconclusive"
    assert render_report_text(d, planted.bundle, locale="en")
