"""Choosing the locale of a message: spellings, precedence, and who an ephemeral reply is for."""

from __future__ import annotations

import pytest

from bot.core.model.locales import (
    DEFAULT_LOCALE,
    UnsupportedLocaleError,
    choose_locale,
    normalize,
    opening_locale,
    parse_locale,
)


@pytest.mark.parametrize(
    ("tag", "expected"),
    [
        ("en", "en"),
        ("en-US", "en"),
        ("en-GB", "en"),
        ("en_US.UTF-8", "en"),
        ("EN-us", "en"),
        ("zh-CN", "zh-CN"),
        ("zh_CN", "zh-CN"),
        ("zh-cn", "zh-CN"),
        ("zh_CN.UTF-8", "zh-CN"),
        ("zh-Hans", "zh-CN"),
        ("zh-Hans-CN", "zh-CN"),
        ("zh-SG", "zh-CN"),
        ("zh", "zh-CN"),
        ("zh-TW", None),
        ("zh_TW", None),
        ("zh-HK", None),
        ("zh-Hant", None),
        ("zh-Hant-TW", None),
        ("zh-yue-HK", None),
        ("ja-JP", None),
        ("fr-FR", None),
        ("C", None),
        ("C.UTF-8", None),
        ("", None),
        (None, None),
        ("zh-CN; DROP TABLE", None),
    ],
)
def test_slack_and_posix_spellings_normalise_to_a_supported_locale_or_none(
    tag: str | None, expected: str | None
) -> None:
    assert normalize(tag) == expected


@pytest.mark.parametrize("value", ["fr", "zh-TW", "", "chinese"])
def test_an_explicit_locale_gpunode_cannot_write_is_refused_with_the_supported_ones(
    value: str,
) -> None:
    with pytest.raises(UnsupportedLocaleError) as err:
        parse_locale(value)
    assert "en, zh-CN" in str(err.value)


def test_an_explicit_spelling_is_accepted_in_its_normal_form() -> None:
    assert parse_locale("zh_CN") == "zh-CN"
    assert parse_locale("en-GB") == "en"


# explicit, channel override, thread, user -> (thread post, ephemeral reply)
PRECEDENCE = [
    ((None, None, None, None), ("en", "en")),
    ((None, None, None, "zh-CN"), ("zh-CN", "zh-CN")),
    ((None, None, "zh-CN", "en-US"), ("zh-CN", "en")),
    ((None, None, "en", "zh-CN"), ("en", "zh-CN")),
    ((None, "en", "zh-CN", "zh-CN"), ("en", "en")),
    ((None, "zh-CN", "en", "en-GB"), ("zh-CN", "zh-CN")),
    (("en", "zh-CN", "zh-CN", "zh-CN"), ("en", "en")),
    (("zh-CN", None, "en", "en"), ("zh-CN", "zh-CN")),
    ((None, None, None, "zh-TW"), ("en", "en")),
    ((None, None, "en", "ja-JP"), ("en", "en")),
    ((None, None, None, "ja-JP"), (DEFAULT_LOCALE, DEFAULT_LOCALE)),
]


@pytest.mark.parametrize(("inputs", "expected"), PRECEDENCE)
def test_explicit_beats_channel_beats_thread_beats_user_beats_english(
    inputs: tuple[str | None, ...], expected: tuple[str, str]
) -> None:
    explicit, channel, thread, user = inputs
    post = choose_locale(explicit=explicit, channel=channel, thread=thread, user=user)
    reply = choose_locale(
        explicit=explicit, channel=channel, thread=thread, user=user, audience="person"
    )
    assert (post, reply) == expected


@pytest.mark.parametrize(
    ("channel", "user", "expected"),
    [
        (None, "zh-CN", "zh-CN"),
        (None, "en-US", "en"),
        ("en", "zh-CN", "en"),
        ("zh-CN", "en-US", "zh-CN"),
        (None, None, "en"),
    ],
)
def test_a_new_thread_keeps_the_channels_locale_else_its_openers(
    channel: str | None, user: str | None, expected: str
) -> None:
    assert opening_locale(channel=channel, user=user) == expected
