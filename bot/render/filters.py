"""Formatting and escaping shared by every view. Pure functions, no Jinja import.

Escaping contract (reference/slack.md section 3): Slack mrkdwn needs only ``&`` ``<`` ``>``
replaced, ``&`` first; never HTML-encode the rest. Markdown escapes inline markup and raw
HTML so a hostile pod name cannot inject links, emphasis or tags into a report.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Iterable, Sequence
from datetime import UTC, datetime
from typing import Any

import markupsafe

from bot.core.model.quantity import QuantityError, parse_quantity
from bot.render.catalogs import translator

_UNITS = ("B", "KiB", "MiB", "GiB", "TiB", "PiB")


def fmt_bytes(value: float | int | None) -> str:
    """Binary units with one decimal: ``62.0 GiB``; ``n/a`` for None; sign kept."""
    if value is None:
        return "n/a"
    sign = "-" if value < 0 else ""
    n = float(abs(value))
    if n < 1024:
        return f"{sign}{int(n)} B"
    unit = 0
    while n >= 1024 and unit < len(_UNITS) - 1:
        n /= 1024
        unit += 1
    return f"{sign}{n:.1f} {_UNITS[unit]}"


def fmt_percent(value: float | int | None) -> str:
    """A 0-100 value: ``85%``, small values keep one decimal (``3.5%``)."""
    if value is None:
        return "n/a"
    v = float(value)
    if v != 0 and abs(v) < 10:
        return f"{v:.1f}%"
    return f"{v:.0f}%"


def fmt_ratio(value: float | int | None) -> str:
    """A 0-1 ratio shown as a percentage."""
    return "n/a" if value is None else fmt_percent(float(value) * 100)


def fmt_duration(seconds: float | int | None) -> str:
    """``45s``, ``3m 20s``, ``2h 5m``, ``1d 3h``."""
    if seconds is None:
        return "n/a"
    s = round(float(seconds))
    if s < 60:
        return f"{s}s"
    m, s = divmod(s, 60)
    if m < 60:
        return f"{m}m {s}s" if s else f"{m}m"
    h, m = divmod(m, 60)
    if h < 24:
        return f"{h}h {m}m" if m else f"{h}h"
    d, h = divmod(h, 24)
    return f"{d}d {h}h" if h else f"{d}d"


def fmt_clock(iso: str, *, locale: str) -> str:
    """``2026-12-01T02:14:09+00:00`` -> ``02:14 UTC``, the time as ``locale`` writes it
    (Babel, ``Translator.when``); text that is not ISO-8601 unchanged."""
    try:
        moment = datetime.fromisoformat(iso)
    except ValueError:
        return iso
    moment = moment.astimezone(UTC) if moment.tzinfo is not None else moment.replace(tzinfo=UTC)
    return f"{translator(locale).when(moment, 'time')} UTC"


def fmt_number(value: float | int | str | None) -> str:
    if value is None:
        return "n/a"
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        return f"{value:,.0f}" if value.is_integer() else f"{value:,.2f}"
    return str(value)


def mrkdwn(text: object) -> str:
    """Slack mrkdwn escape: ``&`` first, then ``<`` and ``>``. Nothing else."""
    return str(text).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


_ESCAPED_MENTION = re.compile(r"&lt;@([UW][A-Z0-9]{2,40})&gt;")


def user_mentions(escaped: str) -> str:
    """After ``mrkdwn``: turn escaped user mentions (``&lt;@U123&gt;``) back into mentions.
    Only plain user ids: ``<!channel>``, links and anything else stay escaped."""
    return _ESCAPED_MENTION.sub(r"<@\1>", escaped)


_MD_SPECIAL = "\\`*_[]|~#"
_MD_ESCAPES = str.maketrans({c: "\\" + c for c in _MD_SPECIAL})


def md(text: object) -> str:
    """Markdown inline escape: HTML-significant characters as entities, inline markup
    characters backslash-escaped, newlines flattened (safe in table cells and list items)."""
    out = (
        plain(str(text).replace("\n", " "))
        .replace("&", "&amp;")
        .replace("<", "&lt;")
        .replace(">", "&gt;")
    )
    return out.translate(_MD_ESCAPES).replace("\r", " ").replace("\n", " ")


def plain(text: object) -> str:
    """Terminal text: control characters (ANSI escapes included) made visible as ``?``."""
    s = str(text)
    if s.isprintable():  # the usual case, checked in one pass
        return s
    return "".join(c if c.isprintable() else "?" for c in s)


def md_code(text: object) -> str:
    """An inline Markdown code span that survives backticks in the text. Nothing renders
    inside a code span, so only ``|`` (GFM table cells) and control characters are
    neutralised."""
    s = plain(str(text).replace("\n", " ")).replace("|", "\\|")
    fence = "`"
    while fence in s:
        fence += "`"
    pad = " " if s.startswith("`") or s.endswith("`") else ""
    return f"{fence}{pad}{s}{pad}{fence}"


#: an escape cut short at the end of a string (``&am`` of ``&amp;``)
_OPEN_ENTITY = re.compile(r"&[a-z]{0,4}$")


def truncate(text: str, limit: int, *, marker: str = "…") -> str:
    """Cut to at most ``limit`` characters (Slack counts characters, not bytes: one CJK
    character is one), ending with ``marker`` when cut. The cut never ends inside a mrkdwn
    escape (``&amp;`` ``&lt;`` ``&gt;``), an unclosed control sequence (``<@U123>``,
    ``<!date^…|…>``) or between the halves of a surrogate pair; it backs up to before it."""
    if len(text) <= limit:
        return text
    cut = text[: max(0, limit - len(marker))]
    entity = _OPEN_ENTITY.search(cut)
    if entity is not None:
        cut = cut[: entity.start()]
    opened = cut.rfind("<")
    if opened > cut.rfind(">"):
        cut = cut[:opened]
    if cut and "\ud800" <= cut[-1] <= "\udbff":
        cut = cut[:-1]
    return cut + marker


def display_width(text: str) -> int:
    """Columns ``text`` takes in a monospace terminal or code block: East Asian wide and
    fullwidth characters (CJK) take two, everything else one."""
    return sum(2 if unicodedata.east_asian_width(c) in ("W", "F") else 1 for c in text)


def pad(text: object, width: int) -> str:
    """Left-aligned to ``width`` display columns (``"%-13s"`` that counts a CJK character as
    the two columns it takes); longer text is returned as it is."""
    s = str(text)
    return s + " " * max(0, width - display_width(s))


def columns(rows: Sequence[Sequence[str]]) -> str:
    """A plain-text table: every column but the last padded to its widest cell by display
    columns (CJK counts two), the last one not padded, two spaces between, lines stripped."""
    if not rows:
        return ""
    padded = len(rows[0]) - 1
    widths = [max(display_width(row[i]) for row in rows) for i in range(padded)]
    return "\n".join(
        "  ".join([*(pad(row[i], widths[i]) for i in range(padded)), row[-1]]).rstrip()
        for row in rows
    )


def rpad(text: object, width: int) -> str:
    """Right-aligned to ``width`` display columns (``"%6s"`` that counts CJK as two)."""
    s = str(text)
    return " " * max(0, width - display_width(s)) + s


def join_sentences(sentences: Iterable[object], sep: str = "; ") -> str:
    """Sentences in a row: ``sep`` between them, none after one that already ends with a
    full-width stop (Chinese: ``。``), whatever the language."""
    out = ""
    for s in map(str, sentences):
        if out and not out.endswith(("。", "！", "？")):
            out += sep
        out += s
    return out


ESCAPERS: dict[str, Callable[[object], str]] = {"mrkdwn": mrkdwn, "markdown": md, "text": plain}


def format_value(value: float | int | str | None, unit: str) -> str:
    """A fact's value by its unit (``bytes``, ``percent``, ``ratio``, ``seconds``...)."""
    if value is None:
        return "n/a"
    if isinstance(value, str):
        return value
    if unit == "bytes":
        return fmt_bytes(value)
    if unit == "percent":
        return fmt_percent(value)
    if unit == "ratio":
        return fmt_ratio(value)
    if unit == "seconds":
        return fmt_duration(value)
    if unit == "cores":
        return f"{fmt_number(value)} cores"
    return fmt_number(value)


def format_param(name: str, value: float | int | str | None, *, locale: str) -> str:
    """A template parameter by its name's unit suffix (``_bytes``, ``_percent``, ``_ratio``,
    ``_s``); strings are returned unescaped (the caller escapes for its format). An ISO-8601
    string named ``*_at`` is a moment, shown as ``02:14 UTC`` in ``locale``'s way."""
    if name.endswith("_at") and isinstance(value, str):
        return fmt_clock(value, locale=locale)
    if isinstance(value, str) or value is None:
        return "n/a" if value is None else value
    if name in ("percent", "share"):
        return format_value(value, "percent")
    for suffix, unit in (
        ("_bytes", "bytes"),
        ("_percent", "percent"),
        ("_pct", "percent"),
        ("_ratio", "ratio"),
        ("_s", "seconds"),
        ("_seconds", "seconds"),
        ("_cores", "cores"),
    ):
        if name.endswith(suffix):
            return format_value(value, unit)
    return fmt_number(value)


def memory_hint(value: object) -> str:
    """`` (42.9 GiB)`` after a memory quantity that is not a round number of GiB
    (``43904Mi``), else ``""``: the quantity stays exactly as Kubernetes reads it and the
    reader gets a size they can compare. Never echoes its input, so it needs no escaping."""
    try:
        size = parse_quantity(str(value)).as_float()
    except QuantityError:
        return ""
    if size >= 1 << 30 and not float(size / (1 << 30)).is_integer():
        return f" ({fmt_bytes(size)})"
    return ""


_CODE = re.compile(r"`([^`\n]+)`")


def code_spans(text: object) -> markupsafe.Markup:
    """``text`` escaped for HTML, its `code` spans as ``<code>`` elements, and no backtick
    left over: sentences keep Markdown's backticks, a browser must not show them."""
    escaped = str(markupsafe.escape(text))
    # safe: every character of ``text`` was escaped above; only <code> tags are added
    return markupsafe.Markup(_CODE.sub(r"<code>\1</code>", escaped).replace("`", ""))  # noqa: S704


FILTERS: dict[str, Callable[..., Any]] = {
    "bytes": fmt_bytes,
    "percent": fmt_percent,
    "ratio": fmt_ratio,
    "duration": fmt_duration,
    "number": fmt_number,
    "mrkdwn": mrkdwn,
    "user_mentions": user_mentions,
    "md": md,
    "md_code": md_code,
    "plain": plain,
    "truncate_to": truncate,
    "memory_hint": memory_hint,
    "pad": pad,
    "rpad": rpad,
    "width": display_width,
    "join_sentences": join_sentences,
    "code_spans": code_spans,
}
