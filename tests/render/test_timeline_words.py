"""A timeline entry says what happened as a code and values (``TimelineEntry.said``); the
reader's language words it wherever it is shown: the postmortem's story, the chart's action
markers. A row written by an older version carries only its English text, shown as stored."""

from __future__ import annotations

from datetime import UTC, datetime

from bot.core.model.incidents import TimelineEntry, said
from bot.core.reporting.charts import action_markers
from bot.render.catalogs import translator
from bot.render.markers import marker_label
from bot.render.timeline import entry_text
from tests.render.test_catalogs import english_words

T0 = datetime(2026, 12, 1, 2, 0, tzinfo=UTC)
STALE = "refused as stale: the evidence is 12 min old (limit 10 min)"


def _entry(text: str, data: dict[str, object]) -> TimelineEntry:
    return TimelineEntry(
        incident_id="INC-0001", at=T0, kind="action_result", actor="U1", text=text, data=data
    )


def test_a_refusal_as_stale_is_worded_from_its_reason_not_from_its_english_text() -> None:
    entry = _entry(STALE, said("refused_stale", reason="evidence_old", age_min=12, limit_min=10))

    zh = entry_text(entry.said, entry.text, locale="zh-CN")
    en = entry_text(entry.said, entry.text, locale="en")

    assert zh.startswith("因过时被拒绝：") and "12 分钟" in zh and english_words(zh) == []
    assert en == (
        "refused as stale: the evidence is 12 min old (limit 10 min); "
        "re-diagnose to act on current numbers"
    )


def test_a_row_written_by_an_older_version_is_shown_as_stored() -> None:
    old = _entry(STALE, {})
    assert old.said is None
    assert entry_text(old.said, old.text, locale="zh-CN") == STALE


def test_a_code_this_version_does_not_know_falls_back_to_the_stored_text() -> None:
    newer = _entry("tier 2 teleported", said("teleported", tier=2))
    assert entry_text(newer.said, newer.text, locale="zh-CN") == "tier 2 teleported"


def test_an_action_marker_on_the_chart_says_what_its_entry_says() -> None:
    data = {"action_id": "A1"} | said("undone", tier=3)
    [marker] = action_markers([_entry("tier 3 undone", data)], node="gpu-node-01")

    assert marker.params == {"code": "undone", "params": {"tier": 3}}
    assert marker_label(marker.kind, marker.params, marker.label, translator("zh-CN")) == (
        "第 3 级已撤销"
    )
    assert marker_label(marker.kind, marker.params, marker.label, translator("en")) == (
        "tier 3 undone"
    )
