from __future__ import annotations

import pytest

from bot.render.filters import (
    fmt_bytes,
    fmt_duration,
    fmt_percent,
    format_param,
    md,
    md_code,
    mrkdwn,
    plain,
    truncate,
)

GiB = 1024**3


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (None, "n/a"),
        (0, "0 B"),
        (1023, "1023 B"),
        (1536, "1.5 KiB"),
        (62 * GiB, "62.0 GiB"),
        (int(3.5 * GiB), "3.5 GiB"),
        (-2 * GiB, "-2.0 GiB"),
        (2 * 1024 * GiB, "2.0 TiB"),
    ],
)
def test_bytes_are_shown_in_binary_units_with_one_decimal(value: int | None, text: str) -> None:
    assert fmt_bytes(value) == text


@pytest.mark.parametrize(
    ("value", "text"), [(85, "85%"), (99.4, "99%"), (3.5, "3.5%"), (0, "0%"), (None, "n/a")]
)
def test_percentages_keep_a_decimal_only_when_small(value: float | None, text: str) -> None:
    assert fmt_percent(value) == text


@pytest.mark.parametrize(
    ("seconds", "text"),
    [(42, "42s"), (200, "3m 20s"), (3600, "1h"), (7500, "2h 5m"), (97200, "1d 3h")],
)
def test_durations_are_compact(seconds: int, text: str) -> None:
    assert fmt_duration(seconds) == text


def test_mrkdwn_escape_replaces_only_amp_lt_gt_and_amp_first() -> None:
    assert mrkdwn("a&b<c>") == "a&amp;b&lt;c&gt;"
    assert mrkdwn("<!channel>") == "&lt;!channel&gt;"
    assert mrkdwn("&lt;") == "&amp;lt;"
    assert mrkdwn("*bold* _it_ \"q\" 'x'") == "*bold* _it_ \"q\" 'x'"


def test_markdown_escape_neutralises_links_emphasis_html_and_newlines() -> None:
    out = md("[x](http://e) *b* <script>&\nnext|cell")
    assert "<" not in out and "](" not in out.replace("\\]", "")
    assert out == "\\[x\\](http://e) \\*b\\* &lt;script&gt;&amp; next\\|cell"


def test_markdown_code_span_survives_backticks() -> None:
    assert md_code("a`b") == "``a`b``"
    assert md_code("plain") == "`plain`"


def test_plain_text_neutralises_terminal_escape_sequences() -> None:
    assert "\x1b" not in plain("\x1b[31mred")


def test_params_are_formatted_by_their_unit_suffix() -> None:
    assert format_param("working_set_bytes", 62 * GiB, locale="en") == "62.0 GiB"
    assert format_param("limits_percent", 99, locale="en") == "99%"
    assert format_param("slab_ratio", 0.3, locale="en") == "30%"
    assert format_param("age_s", 90, locale="en") == "1m 30s"
    assert format_param("pods", 12000, locale="en") == "12,000"
    assert format_param("pod", "ml/x", locale="en") == "ml/x"


def test_truncate_marks_the_cut() -> None:
    assert truncate("abcdef", 4) == "abc…"
    assert truncate("abc", 4) == "abc"
