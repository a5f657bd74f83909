from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from bot.core.evidence import EvidenceBundle
from bot.core.findings import Diagnosis
from bot.core.incidents import Incident, TimelineEntry
from bot.render.markdown import render_report_markdown, render_timeline_markdown
from bot.render.text import render_report_text

T0 = datetime(2026, 3, 14, 9, 0, tzinfo=UTC)


def test_the_markdown_report_has_what_the_write_up_reported(
    seed_diagnosis: Diagnosis, seed_bundle: EvidenceBundle
) -> None:
    md = render_report_markdown(seed_diagnosis, seed_bundle, incident="INC-0001")
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
    md = render_report_markdown(hostile_diagnosis)
    # code spans keep the raw text (nothing renders inside one); everything else is escaped
    outside = re.sub(r"(`+)(?!`).*?(?<!`)\1(?!`)", "", md.replace("```", ""))
    assert "<!channel>" not in outside and "<c>" not in outside
    assert "[link](" not in outside
    assert "a&amp;b&lt;c&gt;" in md
    assert "\x1b" not in md


def test_the_terminal_report_is_plain_and_aligned(
    hostile_diagnosis: Diagnosis, seed_diagnosis: Diagnosis, seed_bundle: EvidenceBundle
) -> None:
    assert "\x1b" not in render_report_text(hostile_diagnosis)
    text = render_report_text(seed_diagnosis, seed_bundle)
    rows = [line for line in text.splitlines() if re.match(r"^\s+\d+\.\d GiB\s+\S+%\s{2}", line)]
    assert len(rows) >= 4
    assert len({line.index("GiB") for line in rows}) == 1  # right-aligned amounts
    assert "GPU0" in text and "VERDICT" in text


@dataclass
class Snap:
    at: datetime
    sha256: str
    diagnosis_json: str
    extra: dict[str, Any] = field(default_factory=dict)


def test_the_timeline_export_lists_entries_in_order_with_snapshots(
    seed_diagnosis: Diagnosis,
) -> None:
    inc = Incident(
        id="INC-0003",
        number=3,
        node="gpu-node-01",
        opened_at=T0,
        opened_by="U1",
        state="resolved",
        resolved_at=T0 + timedelta(hours=4),
        resolution_note="capped <preprocess> & rebalanced",
    )
    entries = [
        TimelineEntry(
            incident_id="INC-0003",
            at=T0 + timedelta(minutes=5),
            kind="action_requested",
            actor="U2",
            text="tier 1 | cordon",
            data={"tier": 1},
        ),
        TimelineEntry(
            incident_id="INC-0003", at=T0, kind="opened", actor="U1", text="<!channel> diagnose"
        ),
    ]
    snaps = [
        Snap(
            at=T0 + timedelta(minutes=1),
            sha256="ab" * 32,
            diagnosis_json=seed_diagnosis.model_dump_json(),
        )
    ]
    md = render_timeline_markdown(inc, entries, snaps)
    assert md.index("| opened |") < md.index("| action requested |")
    assert "<!channel>" not in md and "&lt;\\!channel&gt;" not in md and "&lt;!channel&gt;" in md
    assert "tier 1 \\| cordon" in md
    assert "(after 4h)" in md
    assert "| host memory exhausted by a workload | 248.0 GiB of 251.0 GiB | `abababababab` |" in md


def test_the_timeline_export_accepts_a_bare_incident_id() -> None:
    md = render_timeline_markdown("INC-0009", [], [])
    assert md.startswith("# Incident timeline: INC-0009") and "No entries." in md


def test_the_timeline_export_shows_user_ids_as_code_and_the_bot_as_a_word() -> None:
    inc = Incident(id="INC-0004", number=4, node="n1", opened_at=T0, opened_by="U0ALICE")
    entries = [
        TimelineEntry(incident_id="INC-0004", at=T0, kind="opened", actor="U0ALICE", text="x"),
        TimelineEntry(incident_id="INC-0004", at=T0, kind="evidence", actor="gpunode", text="y"),
        TimelineEntry(incident_id="INC-0004", at=T0, kind="diagnosis", actor="alertmanager",
                      text="z"),
    ]  # fmt: skip
    md = render_timeline_markdown(inc, entries, [])
    assert "\\_" not in md.replace("No entries", "")
    assert "by `U0ALICE`" in md
    assert "| opened | `U0ALICE` |" in md
    assert "| evidence | gpunode |" in md and "| diagnosis | alertmanager |" in md
