"""The catalogs: every word a view shows comes from ``locales/*/LC_MESSAGES/gpunode.po``.

Fails when a message id (freshly extracted from the templates and render code, as ``make
catalogs`` does) has no Chinese translation, when a translation drops or invents a
placeholder, and when English words reach a Chinese or pseudo-locale (``en-XA``) rendering.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
from babel.messages.frontend import CommandLineInterface
from babel.messages.pofile import read_po

from bot.core.reporting.analysis import analyze
from bot.render import catalogs
from bot.render.environment import template_root
from tests.render.locale_renderings import every_message
from tests.services.fakes import load_scenario as load_fixture

REPO = template_root().parent
PLACEHOLDER = re.compile(r"%\((\w+)\)[sdfr]")
#: markup whose text is not prose: code spans, Slack controls and HTML tags, emoji codes,
#: URLs, Markdown link targets, entities
_NOT_PROSE = re.compile(
    r"```.*?```|`[^`]*`|<[^<>]*>|:[a-z0-9_+-]+:|https?://\S+|\]\([^)]*\)|&[a-z]+;", re.S
)
#: English function words: a sentence has them, a label or a name seldom does
_STOPWORDS = """the and of to is are was for with on in not no be it its this that by from after
before only once still more than has have any all when which what does did will would should
can could there their they them you your a an or but been being were at as"""
STOPWORDS = frozenset(re.findall(r"[a-z]+", _STOPWORDS))
#: a word right after ``{`` is a placeholder of a URL template (``{from}``), not prose
_WORD = re.compile(r"(?<![\w./@#{-])[A-Za-z]+(?![\w./@-])")
#: a quoted kernel log line, as the pseudo-locale shows it (verbatim, in straight quotes; HTML
#: escapes them)
_STRAIGHT_QUOTED = re.compile(r'"[^"\n]*"|&#34;.*?&#34;|&quot;.*?&quot;')
#: renderings the Chinese check leaves out, each with the reason (reported as not done)
KNOWN_ENGLISH = {
    # the kit's files (templates/kube/prevention) explain each value in English YAML comments;
    # the postmortem embeds them in <pre> blocks
    "prevention": "the prevention kit's YAML comments are English-only",
}
#: evidence quoted verbatim (a kernel log line) and untranslatable API text in the fixtures
_QUOTED = re.compile(r"“[^”]*”|0/3 nodes are available|evictions are forbidden here")
_PRE = re.compile(r"<pre>.*?</pre>", re.S)


def english_words(text: str) -> list[str]:
    """English function words in ``text`` outside markup and verbatim quotes (empty: no
    English sentence)."""
    prose = _NOT_PROSE.sub(" ", _QUOTED.sub(" ", text))
    return [w for w in _WORD.findall(prose) if w.lower() in STOPWORDS]


def _texts(value: object) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for v in value.values():
            yield from _texts(v)
    elif isinstance(value, list | tuple):
        for v in value:
            yield from _texts(v)
    elif isinstance(value, bytes):
        yield value.decode("utf-8", "replace")


@pytest.fixture(scope="module")
def extracted(tmp_path_factory: pytest.TempPathFactory) -> set[object]:
    pot = tmp_path_factory.mktemp("pot") / "gpunode.pot"
    CommandLineInterface().run(
        [
            "pybabel",
            "-q",
            "extract",
            "-F",
            str(REPO / "babel.cfg"),
            "--no-location",
            "-k",
            "_",
            "-o",
            str(pot),
            str(REPO),
        ]
    )
    with pot.open("rb") as fh:
        return {m.id for m in read_po(fh) if m.id}


def _catalog(locale: str) -> dict[object, object]:
    with catalogs.po_path(locale).open("rb") as fh:
        return {m.id: m.string for m in read_po(fh, locale=catalogs.babel_name(locale)) if m.id}


def test_every_message_id_in_the_code_is_in_every_catalog(extracted: set[object]) -> None:
    for locale in ("en", "zh-CN"):
        missing = sorted(map(str, extracted - _catalog(locale).keys()))
        assert missing == [], f"{locale}: run `make catalogs` and translate {missing}"


def test_every_message_id_has_a_chinese_translation() -> None:
    untranslated = [
        str(mid)
        for mid, text in _catalog("zh-CN").items()
        if not (text[0] if isinstance(text, tuple) else text)
    ]
    assert untranslated == []


def test_every_translation_keeps_the_placeholders_of_its_message_id() -> None:
    wrong = []
    for mid, text in _catalog("zh-CN").items():
        ids = mid if isinstance(mid, tuple) else (mid,)
        texts = text if isinstance(text, tuple) else (text,)
        wanted = set(PLACEHOLDER.findall(ids[-1])) | set(PLACEHOLDER.findall(ids[0]))
        for t in texts:
            got = set(PLACEHOLDER.findall(str(t)))
            # a plural's singular may leave the count out ("one pod"), never invent one
            if got - wanted or (set(PLACEHOLDER.findall(ids[0])) - {"count", "num"}) - got:
                wrong.append((ids[0], t))
    assert wrong == []


def test_plural_forms_follow_the_count() -> None:
    en, zh = catalogs.translator("en"), catalogs.translator("zh-CN")
    one = ":white_check_mark: *Evictions complete*: %(count)s pod gone."
    many = ":white_check_mark: *Evictions complete*: %(count)s pods gone."
    assert en.ngettext(one, many, 1, count=1).endswith("1 pod gone.")
    assert en.ngettext(one, many, 3, count=3).endswith("3 pods gone.")
    assert "3 个 Pod 已消失" in zh.ngettext(one, many, 3, count=3)


@pytest.mark.parametrize(
    ("seconds", "en", "zh"),
    [
        (45, "45s", "45秒"),
        (611, "10m 11s", "10分钟11秒"),
        (7500, "2h 5m", "2小时5分钟"),
        (7200, "2h", "2小时"),
        (97200, "1d 3h", "1天3小时"),
        (0, "0s", "0秒"),
    ],
)
def test_durations_are_written_as_each_locale_writes_them(seconds: int, en: str, zh: str) -> None:
    assert catalogs.format_duration(seconds, locale="en") == en
    assert catalogs.format_duration(seconds, locale="zh-CN") == zh
    assert catalogs.format_duration(seconds, locale="en-XA") == en  # pseudo: English formats


def test_the_pseudo_locale_accents_and_lengthens_every_message_but_keeps_the_markup() -> None:
    text = ":warning: Undo puts `ml/x` back on %(names)s: <@U1> restarts *twice*."
    out = catalogs.pseudo(text)
    for kept in (":warning:", "`ml/x`", "%(names)s", "<@U1>"):
        assert kept in out
    assert english_words(out) == []
    assert len(out) >= len(text) * 1.35
    assert catalogs.translator("en-XA").gettext("Applied") == catalogs.pseudo("Applied")


def test_the_leak_detector_finds_an_english_sentence_and_ignores_markup() -> None:
    assert english_words("节点 `is the pod` <@U1|the> :the: 已经") == []
    assert english_words("节点 the pod is gone") == ["the", "is"]


@pytest.fixture(scope="module")
def renderings() -> dict[str, dict[str, object]]:
    bundle, view = load_fixture("seed")
    d = analyze(bundle, view, now=bundle.collected_at)
    return {loc: every_message(d, bundle, view, loc) for loc in ("zh-CN", "en-XA")}


def test_no_english_sentence_reaches_a_chinese_rendering(
    renderings: dict[str, dict[str, object]],
) -> None:
    views = {n: m for n, m in renderings["zh-CN"].items() if n not in KNOWN_ENGLISH}
    views["postmortem.html"] = _PRE.sub(" ", str(views["postmortem.html"]))  # the kit's files
    leaks = {
        name: words
        for name, message in views.items()
        for text in _texts(message)
        if (words := english_words(text))
    }
    assert leaks == {}


def test_no_plain_english_reaches_a_pseudo_locale_rendering_of_any_view(
    renderings: dict[str, dict[str, object]],
) -> None:
    merged = {n: m for n, m in renderings["en-XA"].items() if n not in KNOWN_ENGLISH}
    assert len(merged) > 40, sorted(merged)
    merged["postmortem.html"] = _PRE.sub(" ", str(merged["postmortem.html"]))  # the kit's files
    leaks = {
        name: words
        for name, message in merged.items()
        for text in _texts(message)
        if (words := english_words(_STRAIGHT_QUOTED.sub(" ", text)))
    }
    assert leaks == {}


def test_every_message_renders_within_slacks_limits_in_the_pseudo_locale(
    renderings: dict[str, dict[str, object]],
) -> None:
    """40% longer words: every Slack message was checked against Block Kit's limits as it
    rendered (``every_message``), and no kind of message went missing on the way."""
    assert renderings["en-XA"].keys() == renderings["zh-CN"].keys()
    assert any("⟦" in text for text in _texts(renderings["en-XA"]["details"]))


def test_the_catalog_files_are_text(tmp_path: Path) -> None:
    """No compiled .mo in the tree: the .po files are read at runtime."""
    assert not list(catalogs.catalog_root().rglob("*.mo"))


@pytest.mark.parametrize(
    ("style", "en", "zh"),
    [
        ("datetime", "2026-12-01 02:05:07", "2026年12月1日 02:05:07"),
        ("datetime_min", "2026-12-01 02:05", "2026年12月1日 02:05"),
        ("date", "2026-12-01", "2026年12月1日"),
        ("time", "02:05", "02:05"),
    ],
)
def test_dates_are_written_as_each_locale_writes_them(style: str, en: str, zh: str) -> None:
    """Babel formats each date with its locale's pattern, which the locale's catalog gives."""
    moment = datetime(2026, 12, 1, 2, 5, 7, tzinfo=UTC)
    assert catalogs.translator("en").when(moment, style) == en
    assert catalogs.translator("zh-CN").when(moment, style) == zh
    assert catalogs.translator("en-XA").when(moment, style) == en  # pseudo: English formats
