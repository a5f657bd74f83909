from __future__ import annotations

from datetime import timedelta

import pytest

from bot.core.model.durations import format_duration, parse_duration
from bot.errors import UsageError


@pytest.mark.parametrize(
    ("text", "span"),
    [
        ("30m", timedelta(minutes=30)),
        ("4h", timedelta(hours=4)),
        ("7d", timedelta(days=7)),
        ("90s", timedelta(seconds=90)),
        ("2w", timedelta(weeks=2)),
        ("1h30m", timedelta(hours=1, minutes=30)),
        (" 4H ", timedelta(hours=4)),
    ],
)
def test_durations_parse(text: str, span: timedelta) -> None:
    assert parse_duration(text) == span


@pytest.mark.parametrize(
    "text", ["", "30", "h", "4 hours", "-4h", "0m", "4.5h", "yesterday", "1000000w"]
)
def test_bad_durations_are_usage_errors(text: str) -> None:
    with pytest.raises(UsageError):
        parse_duration(text)


@pytest.mark.parametrize(
    ("span", "text"),
    [(timedelta(hours=1, minutes=30), "1h30m"), (timedelta(0), "0s"), (timedelta(days=7), "7d")],
)
def test_durations_format_back(span: timedelta, text: str) -> None:
    assert format_duration(span) == text
