"""The words of every message, per locale: gettext catalogs (Babel), and the translator API.

Layout lives in ``templates/`` (one template per view, words marked with ``{% trans %}`` or
``_()``); words live in ``locales/<babel locale>/LC_MESSAGES/gpunode.po``, extracted with
``make catalogs`` (``pybabel extract -F babel.cfg``, then ``pybabel update``). A new language is
a ``.po`` file and an entry in ``bot.core.model.locales.SUPPORTED``, nothing else.

The ``.po`` files are read at runtime and compiled in memory once per process (``read_po`` then
``write_mo`` into a buffer): there is no build step and no binary ``.mo`` blob in git, and the
wheel ships the same text files (``force-include`` as ``bot/_locales``).

``en-XA`` is a pseudo-locale for tests only (users cannot choose it: ``bot.core.model.locales``
never returns it): every English message accented and lengthened by about 40%, built from the
``en`` catalog's message ids. A string that reaches an ``en-XA`` rendering in plain ASCII
English bypassed the catalog; a layout that breaks on it breaks on German too.

How render code gets words (the API presenters use)::

    t = translator("zh-CN")
    t.gettext("Only the requester can cancel %(action)s.", action=action_id)
    t.ngettext("%(num)d process", "%(num)d processes", 3)   # num defaults to n
    t.duration(611)  # "10m 11s" / "10分钟11秒"
    t.number(12345.6)  # "12,345.6"

Message ids are English sentences with ``%(name)s`` placeholders (a literal ``%`` is ``%%``),
exactly as ``{% trans %}`` writes them, so one catalog serves templates and Python.
"""

from __future__ import annotations

import io
import re
from collections.abc import Mapping
from datetime import UTC, datetime
from functools import cache
from pathlib import Path
from typing import Any, Final

from babel import Locale as BabelLocale
from babel.dates import format_datetime
from babel.lists import format_list
from babel.messages.catalog import Catalog
from babel.messages.mofile import write_mo
from babel.messages.pofile import read_po
from babel.numbers import format_decimal
from babel.support import Translations
from babel.units import format_unit

from bot.core.model import locales

DOMAIN: Final = "gpunode"
#: the pseudo-locale (tests only): accented, lengthened English from the ``en`` catalog
PSEUDO_LOCALE: Final = "en-XA"
#: every locale a view can be rendered in: the supported ones, then the pseudo-locale
RENDER_LOCALES: Final[tuple[str, ...]] = (*locales.SUPPORTED, PSEUDO_LOCALE)
_HERE = Path(__file__).resolve().parent


def render_locale(locale: str | None) -> str:
    """The locale a view is rendered in: ``en-XA`` as written (tests ask for it by name),
    anything else through the one normaliser (``bot.core.model.locales.normalize``), ``en`` when
    it names nothing gpunode speaks."""
    if locale == PSEUDO_LOCALE:
        return PSEUDO_LOCALE
    return locales.normalize(locale) or locales.DEFAULT_LOCALE


def babel_name(locale: str) -> str:
    """``zh-CN`` -> ``zh_CN`` (Babel's and gettext's folder name)."""
    return locale.replace("-", "_")


@cache
def catalog_root() -> Path:
    """The catalogs: the installed ``bot/_locales`` first, else the repository's ``locales``."""
    for candidate in (_HERE.parent / "_locales", _HERE.parents[1] / "locales"):
        if candidate.is_dir():
            return candidate
    raise FileNotFoundError("gpunode catalogs not found (reinstall the package)")


def po_path(locale: str) -> Path:
    return catalog_root() / babel_name(locale) / "LC_MESSAGES" / f"{DOMAIN}.po"


def read_catalog(locale: str) -> Catalog:
    """The ``.po`` catalog of a supported locale, as Babel parses it."""
    with po_path(locale).open("rb") as fh:
        return read_po(fh, locale=babel_name(locale), domain=DOMAIN)


def _compiled(catalog: Catalog) -> Translations:
    buf = io.BytesIO()
    write_mo(buf, catalog)
    buf.seek(0)
    return Translations(fp=buf, domain=DOMAIN)


#: what pseudo-localisation leaves alone: placeholders, a literal %, emoji codes, code spans,
#: Slack control sequences and HTML tags (their text is markup, not words)
_KEEP = re.compile(r"%\([a-z_0-9]+\)[sdfr]|%%|:[a-z0-9_+-]+:|`[^`]*`|<[^<>]*>|&[a-z]+;")
_ACCENTS = str.maketrans(
    "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ",
    "áƀçðéƒĝĥîĵķļɱñóþǫŕšţûṽŵẋýžÁƁÇÐÉƑĜĤÎĴĶĻṀÑÓÞǪŔŠŢÛṼŴẊÝŽ",
)


def pseudo(text: str) -> str:
    """``Diagnosing %(node)s`` -> ``⟦Ðîáĝñóšîñĝ %(node)s·····⟧``: every letter accented
    (so a plain-ASCII word in a rendering did not come from the catalog), about 40% longer
    (so a layout that only fits English shows it), placeholders and markup untouched."""
    if not text.strip():
        return text
    out: list[str] = []
    last = 0
    for m in _KEEP.finditer(text):
        out += [text[last : m.start()].translate(_ACCENTS), m.group(0)]
        last = m.end()
    out.append(text[last:].translate(_ACCENTS))
    body = "".join(out)
    # trailing whitespace and newlines stay outside the brackets (layout depends on them)
    stripped = body.rstrip()
    tail = body[len(stripped) :]
    lead = len(stripped) - len(stripped.lstrip())
    pad = "·" * max(1, round(len(text.strip()) * 0.4))
    return f"{stripped[:lead]}⟦{stripped[lead:]}{pad}⟧{tail}"


def pseudo_catalog() -> Catalog:
    """The ``en-XA`` catalog: every ``en`` message id, pseudo-localised."""
    source = read_catalog(locales.DEFAULT_LOCALE)
    out = Catalog(locale="en", domain=DOMAIN)
    for message in source:
        if not message.id:
            continue
        if isinstance(message.id, tuple | list):
            out.add(
                tuple(message.id),
                tuple(pseudo(part) for part in message.id),
                context=message.context,
            )
        else:
            out.add(message.id, pseudo(str(message.id)), context=message.context)
    return out


@cache
def translations(locale: str) -> Translations:
    """The compiled gettext translations of a render locale (cached per process)."""
    loc = render_locale(locale)
    if loc == PSEUDO_LOCALE:
        return _compiled(pseudo_catalog())
    return _compiled(read_catalog(loc))


def pgettext(context: str, message: str) -> str:
    """Marks ``message`` for extraction (``pybabel extract`` reads ``pgettext`` calls) and
    returns it as it is: the translation is looked up where it is used."""
    return message


#: date and time patterns (CLDR/Babel syntax), one per style; each locale's catalog gives its
#: own (zh-CN: ``y年M月d日 HH:mm:ss``), so a new language brings its date order with its words
DATE_PATTERNS: Final = {
    "datetime": pgettext("date pattern", "yyyy-MM-dd HH:mm:ss"),
    "datetime_min": pgettext("date pattern", "yyyy-MM-dd HH:mm"),
    "date": pgettext("date pattern", "yyyy-MM-dd"),
    "time": pgettext("date pattern", "HH:mm"),
    "time_s": pgettext("date pattern", "HH:mm:ss"),
}


#: a moment in time (``Translator.datetime`` hides the type's name inside the class)
Moment = datetime


class Translator:
    """One locale's words and formats. Get one with ``translator(locale)``."""

    def __init__(self, locale: str) -> None:
        self.locale = render_locale(locale)
        # en-XA formats numbers and durations as English does
        self._babel = BabelLocale.parse(babel_name(locales.DEFAULT_LOCALE))
        if self.locale != PSEUDO_LOCALE:
            self._babel = BabelLocale.parse(babel_name(self.locale))
        self._t = translations(self.locale)

    def gettext(self, message: str, **params: Any) -> str:
        """``message`` (an English message id) in this locale, ``%(name)s`` filled in."""
        return _fill(self._t.gettext(message), params)

    def ngettext(self, singular: str, plural: str, n: int, **params: Any) -> str:
        """The plural form for ``n`` (``%(num)d`` is ``n`` unless given)."""
        params.setdefault("num", n)
        return _fill(self._t.ngettext(singular, plural, n), params)

    def duration(self, seconds: float | None) -> str:
        """``45s``, ``10m 11s``, ``2h 5m``, ``1d 3h`` in English; ``10分钟11秒`` in Chinese:
        the two largest units, CLDR's narrow unit forms joined by the locale's unit list."""
        return format_duration(seconds, locale=self.locale)

    def number(self, value: float | int) -> str:
        return format_decimal(value, locale=self._babel)

    def datetime(self, moment: datetime, *, fmt: str = "medium") -> str:
        return format_datetime(moment, format=fmt, locale=self._babel)

    def when(self, moment: Moment, style: str = "datetime") -> str:
        """``moment`` in UTC as this locale writes it (``DATE_PATTERNS``: the pattern comes
        from the locale's catalog, Babel formats it; en-XA writes dates as English does)."""
        source = translations(
            locales.DEFAULT_LOCALE if self.locale == PSEUDO_LOCALE else self.locale
        )
        pattern = str(source.pgettext("date pattern", DATE_PATTERNS[style]))
        return format_datetime(moment, format=pattern, tzinfo=UTC, locale=self._babel)


def _fill(text: str, params: Mapping[str, Any]) -> str:
    return text % params if params else text.replace("%%", "%")


@cache
def translator(locale: str | None) -> Translator:
    """The translator for a locale (any spelling; cached)."""
    return Translator(render_locale(locale))


_UNITS: Final = (
    ("duration-day", 86400),
    ("duration-hour", 3600),
    ("duration-minute", 60),
    ("duration-second", 1),
)


def format_duration(seconds: float | int | None, *, locale: str) -> str:
    """A duration in its two largest non-zero units, as the locale writes them (Babel/CLDR
    narrow units): ``10m 11s`` (en), ``10分钟11秒`` (zh-CN); ``n/a`` for None."""
    loc = render_locale(locale)
    babel = babel_name(locales.DEFAULT_LOCALE if loc == PSEUDO_LOCALE else loc)
    if seconds is None:
        return translator(loc).gettext("n/a")
    left = round(float(seconds))
    parts: list[tuple[str, int]] = []
    for unit, size in _UNITS:
        count, left = divmod(left, size)
        if count and len(parts) < 2:
            parts.append((unit, count))
        elif parts:
            break  # two adjacent units at most: "1d 3h", never "1d 5m"
    if not parts:
        parts = [("duration-second", 0)]
    words = [format_unit(count, unit, length="narrow", locale=babel) for unit, count in parts]
    return format_list(words, style="unit-narrow", locale=babel)
