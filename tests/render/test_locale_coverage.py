"""Every message key exists in every locale with the same parameters (issue 16): a missing
file, macro, parameter, lookup key or context variable fails the build. The checker is shown
to fail on deliberately broken copies of the real tree, one defect at a time."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from bot.render.environment import LOCALES, normalize_locale, template_root
from tests.render.locale_coverage import KINDS, coverage_problems


def test_every_template_macro_parameter_and_key_exists_in_every_locale() -> None:
    assert coverage_problems(template_root(), LOCALES) == []


def test_every_kind_of_template_has_every_locale() -> None:
    for kind in KINDS:
        if not (template_root() / kind / "en").is_dir():
            continue  # merged into one layout per template: the words are in the catalogs
        for locale in LOCALES:
            assert (template_root() / kind / locale).is_dir(), f"{kind}/{locale}"


#: (what is broken, file under templates/, old text, new text, words the problem must hold)
BREAKAGES = [
    (
        "a macro deleted",
        "slack/zh-CN/notices.j2",
        "{% macro root_headline(headline) %}{{ headline }}{% endmacro %}\n",
        "",
        "macro root_headline missing",
    ),
    (
        "a parameter renamed",
        "slack/zh-CN/acting.j2",
        "{% macro modal_title(tier) %}",
        "{% macro modal_title(t) %}",
        "modal_title(t) differs",
    ),
    (
        "a parameter added",
        "slack/zh-CN/acting.j2",
        "{% macro modal_submit(tier) %}",
        "{% macro modal_submit(tier, extra) %}",
        "modal_submit(tier, extra) differs",
    ),
    (
        "English wording imported into the Chinese message",
        "slack/zh-CN/acting.j2",
        '{% import "sentences/zh-CN/common.j2" as common %}',
        '{% import "sentences/en/findings.j2" as common %}',
        "imports sentences/en/findings.j2",
    ),
    (
        "a lookup key dropped",
        "slack/zh-CN/notices.j2",
        '"opening": "正在开启故障…", ',
        "",
        "macro progress_step lacks keys ['opening']",
    ),
]


@pytest.mark.parametrize(
    ("what", "rel", "old", "new", "expected"), BREAKAGES, ids=[b[0] for b in BREAKAGES]
)
def test_the_coverage_check_fails_on_a_broken_copy(
    tmp_path: Path, what: str, rel: str, old: str, new: str, expected: str
) -> None:
    root = tmp_path / "templates"
    shutil.copytree(template_root(), root)
    path = root / rel
    text = path.read_text(encoding="utf-8")
    assert text.count(old) == 1, f"the breakage for {what!r} no longer applies to {rel}"
    path.write_text(text.replace(old, new), encoding="utf-8")

    problems = coverage_problems(root, LOCALES)

    assert any(expected in p for p in problems), problems


@pytest.mark.parametrize("deleted", ["slack/zh-CN/acting.j2"])
def test_the_coverage_check_fails_when_a_file_is_missing(tmp_path: Path, deleted: str) -> None:
    root = tmp_path / "templates"
    shutil.copytree(template_root(), root)
    (root / deleted).unlink()

    assert f"{deleted}: missing" in coverage_problems(root, LOCALES)


def test_the_coverage_check_fails_when_a_locale_folder_is_missing(tmp_path: Path) -> None:
    root = tmp_path / "templates"
    shutil.copytree(template_root(), root)
    shutil.rmtree(root / "slack" / "zh-CN")

    assert "slack/zh-CN/acting.j2: missing" in coverage_problems(root, LOCALES)


@pytest.mark.parametrize(
    ("given", "locale"),
    [
        ("zh-CN", "zh-CN"),
        ("zh_CN", "zh-CN"),
        ("zh-cn", "zh-CN"),
        ("zh", "zh-CN"),
        ("zh_CN.UTF-8", "zh-CN"),
        ("zh-Hans", "zh-CN"),
        ("zh-Hans-CN", "zh-CN"),
        ("zh-SG", "zh-CN"),
        ("zh-TW", "en"),
        ("zh-Hant", "en"),
        ("en", "en"),
        ("en-US", "en"),
        ("en_GB.UTF-8", "en"),
        ("fr-FR", "en"),
        ("", "en"),
        (None, "en"),
    ],
)
def test_locale_spellings_map_onto_the_template_folders(given: str | None, locale: str) -> None:
    assert normalize_locale(given) == locale
