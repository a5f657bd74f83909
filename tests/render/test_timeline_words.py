"""A timeline entry says what happened as a code and values (``TimelineEntry.said``); the
reader's language words it wherever it is shown: the postmortem's story, the chart's action
markers. A row written by an older version carries only its English text, shown as stored."""

from __future__ import annotations

from datetime import UTC, datetime

from bot.core.model.incidents import TimelineEntry, said
from bot.core.reporting.charts import action_markers
from bot.errors import ClusterUnreachableError
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


FOUND = [
    {"code": "cordoned", "params": {"node": "gpu-node-01"}},
    {"code": "evictions", "params": {"done": 1, "planned": 2}},
    {"code": "check_spec", "params": {"target": "Deployment/ml/train"}},
]
OBSERVED = (
    "node gpu-node-01 cordoned; 1 of 2 planned evictions done; "
    "Deployment/ml/train: check its current spec"
)


def test_what_the_reconciler_found_of_an_interrupted_action_is_worded_from_its_codes() -> None:
    entry = _entry(
        f"tier 3 interrupted by a restart; found: {OBSERVED}",
        said("interrupted", tier=3, found=FOUND),
    )

    assert entry_text(entry.said, entry.text, locale="en") == entry.text
    for locale in ("zh-CN", "en-XA"):
        words = entry_text(entry.said, entry.text, locale=locale)
        assert "gpu-node-01" in words and "Deployment/ml/train" in words
        assert english_words(words) == [], (locale, words)


def test_an_interrupted_entry_of_an_older_version_keeps_what_it_found_as_stored() -> None:
    old = _entry(
        f"tier 3 interrupted by a restart; found: {OBSERVED}",
        said("interrupted", tier=3, found=OBSERVED),
    )
    assert entry_text(old.said, old.text, locale="zh-CN").endswith(OBSERVED)


def test_a_crash_on_a_keyed_error_is_worded_from_the_errors_key_and_params() -> None:
    err = ClusterUnreachableError("prod-eu", waited_s=10)
    message = f"{err.message}. Nothing was changed."
    entry = _entry(
        f"could not carry out the action ({err.code}): {message}",
        said(
            "crashed",
            code=err.code,
            message=message,
            cause="error",
            error=err.message,
            error_key=err.key,
            error_params=dict(err.params),
        ),
    )

    assert entry_text(entry.said, entry.text, locale="en") == entry.text
    for locale in ("zh-CN", "en-XA"):
        words = entry_text(entry.said, entry.text, locale=locale)
        assert "prod-eu" in words and english_words(words) == [], (locale, words)


def test_a_crash_on_a_timeout_is_worded_in_the_readers_language() -> None:
    message = "the API server did not answer in time. Nothing was changed; retry in a minute."
    entry = _entry(
        f"could not carry out the action (timeout): {message}",
        said("crashed", code="timeout", message=message, cause="timeout"),
    )

    assert entry_text(entry.said, entry.text, locale="en") == entry.text
    for locale in ("zh-CN", "en-XA"):
        words = entry_text(entry.said, entry.text, locale=locale)
        assert english_words(words) == [], (locale, words)
