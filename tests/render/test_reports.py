from __future__ import annotations

import re
from datetime import UTC, datetime

from bot.core.diagnosis.findings import Diagnosis
from bot.core.model.evidence import EvidenceBundle
from bot.render.markdown import render_report_markdown
from bot.render.text import render_report_text

T0 = datetime(2026, 3, 14, 9, 0, tzinfo=UTC)


def test_the_markdown_report_has_what_the_write_up_reported(
    seed_diagnosis: Diagnosis, seed_bundle: EvidenceBundle
) -> None:
    md = render_report_markdown(seed_diagnosis, seed_bundle, incident="INC-0001", locale="en")
    for needle in (
        "| Timestamp | 2026-03-14 09:30:00 UTC |",
        "| Node | gpu-node-01 |",
        "| Incident type | host memory exhausted by a workload",
        "Total 251.0 GiB, used 248.0 GiB",
        "### Per-workload breakdown",
        "| ml/preprocess-7d9f | 62.0 GiB |",
        "Total 640.0 GiB, used 512.0 GiB.",
        "## Findings",
        "### For the AI/ML team",
        "*(unverified)*",
        "### Tier 3 · constrain the offender",
    ):
        assert needle in md


def test_the_markdown_report_escapes_hostile_names(hostile_diagnosis: Diagnosis) -> None:
    md = render_report_markdown(hostile_diagnosis, locale="en")
    # code spans keep the raw text (nothing renders inside one); everything else is escaped
    outside = re.sub(r"(`+)(?!`).*?(?<!`)\1(?!`)", "", md.replace("```", ""))
    assert "<!channel>" not in outside and "<c>" not in outside
    assert "[link](" not in outside
    assert "a&amp;b&lt;c&gt;" in md
    assert "\x1b" not in md


def test_the_terminal_report_is_plain_and_aligned(
    hostile_diagnosis: Diagnosis, seed_diagnosis: Diagnosis, seed_bundle: EvidenceBundle
) -> None:
    assert "\x1b" not in render_report_text(hostile_diagnosis, locale="en")
    text = render_report_text(seed_diagnosis, seed_bundle, locale="en")
    rows = [line for line in text.splitlines() if re.match(r"^\s+\d+\.\d GiB\s+\S+%\s{2}", line)]
    assert len(rows) >= 4
    assert len({line.index("GiB") for line in rows}) == 1  # right-aligned amounts
    assert "GPU0" in text and "VERDICT" in text
