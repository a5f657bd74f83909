"""No template helper renders English by default: each names its locale, as a keyword, or
the type checker refuses the call (a forgotten language is caught before it renders)."""

from __future__ import annotations

import inspect

import pytest

from bot.render import environment

HELPERS = [
    environment.get_environment,
    environment.localized_name,
    environment.get_template,
    environment.render,
    environment.macros,
]


@pytest.mark.parametrize("helper", HELPERS, ids=lambda h: h.__name__)
def test_every_template_helper_takes_its_locale_as_a_required_keyword(helper: object) -> None:
    locale = inspect.signature(helper).parameters["locale"]  # type: ignore[arg-type]
    assert locale.kind is inspect.Parameter.KEYWORD_ONLY
    assert locale.default is inspect.Parameter.empty


def test_the_locale_each_helper_is_given_is_the_one_it_renders_in() -> None:
    en = environment.macros("slack", "acting.j2", locale="en")
    zh = environment.macros("slack", "acting.j2", locale="zh-CN")
    assert str(en.undo_button()).strip() == "Undo"
    assert str(zh.undo_button()).strip() != "Undo"
    assert environment.get_environment(locale="zh_CN").globals["locale"] == "zh-CN"
