"""``gpunode doctor``'s rows and ``gpunode migrate``'s lines in a locale: each row's code and
raw params (``bot.core.reporting.checkup``) worded by ``templates/text/cli.txt.j2``'s
``doctor_*`` and ``migrate_*`` macros. ``log_line`` is the English words ``serve`` logs at
start (operators read logs in English), from the same macros: one source of words."""

from __future__ import annotations

from collections.abc import Mapping

from bot.core.reporting.checkup import Finding, Row, failed
from bot.render.cli_text import line
from bot.render.filters import columns

_HEADS = ("status", "area", "check", "detail")


def words(code: str, params: Mapping[str, object], *, locale: str) -> tuple[str, str]:
    """A row's check and detail in ``locale`` (the detail may be '')."""
    p = dict(params)
    what = line("doctor_what", code, p, locale=locale)
    return what, line("doctor_detail", code, p, locale=locale)


def row_words(row: Row, *, locale: str) -> tuple[str, str]:
    return words(row.code, row.params, locale=locale)


def finding_words(finding: Finding, *, locale: str) -> tuple[str, str]:
    """A store roles finding's check and detail, worded as doctor's store row says them."""
    return words(finding.code, {**finding.params, "check": finding.check}, locale=locale)


def table(rows: list[Row], *, locale: str) -> str:
    """A plain table: status, area, check, detail; the first three padded to the widest cell
    by display columns (a Chinese head or word takes two a character), detail last."""
    heads = tuple(line("doctor_head", h, locale=locale) for h in _HEADS)
    cells = [
        heads,
        *(
            (
                line("doctor_level", r.level, locale=locale),
                line("doctor_area", r.area, locale=locale),
                *row_words(r, locale=locale),
            )
            for r in rows
        ),
    ]
    return columns(cells)


def verdict(rows: list[Row], *, locale: str) -> str:
    """The last line: every required check passes, or some row FAILed."""
    return line("doctor_verdict", failed(rows), locale=locale)


def log_line(row: Row) -> str:
    """The row as ``serve`` logs it: ``level area: check (detail)``, in English."""
    what, detail = row_words(row, locale="en")
    return f"{row.level} {row.area}: {what}" + (f" ({detail})" if detail else "")
