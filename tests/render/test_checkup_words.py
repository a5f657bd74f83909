"""``gpunode doctor``'s rows worded from their codes (``bot.render.checkup``): in English each
reads exactly as the table printed it when the checks wrote sentences, the table's layout
included; in Chinese and in the pseudo-locale no English sentence is left but the text a
server or the OS wrote, quoted as it was said; ``serve`` logs the English words."""

from __future__ import annotations

import ast
import logging
from pathlib import Path

import pytest

from bot.core.reporting.checkup import Row
from bot.render import checkup
from bot.render.filters import display_width
from bot.services import doctor
from tests.render.checkup_samples import CHECKUP_SAMPLES, QUOTED_REASONS
from tests.render.test_catalogs import english_words

ROWS = [row for row, _ in CHECKUP_SAMPLES]
REPO = Path(__file__).resolve().parents[2]
#: where the checks write rows (``Row``) and store findings (``Finding``): the code is the
#: third argument
WRITERS = ("bot/services/doctor.py", "bot/store/checkup.py", "bot/store/roles.py")


def _written_codes() -> set[str]:
    """Every code a check can write: the third argument of each ``Row(...)``/``Finding(...)``
    call in the writers, a plain string or each branch of a conditional (a store row copies
    its ``Finding``'s code, counted at the ``Finding``)."""
    codes: set[str] = set()

    def strings(node: ast.expr) -> list[str]:
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            return [node.value]
        if isinstance(node, ast.IfExp):
            return strings(node.body) + strings(node.orelse)
        if ast.unparse(node) == "f.code":  # a store row copies its finding's code
            return []
        raise AssertionError(f"a code that is not a literal: {ast.unparse(node)}")

    for path in WRITERS:
        for node in ast.walk(ast.parse((REPO / path).read_text())):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id in ("Row", "Finding")
                and len(node.args) >= 3
            ):
                codes.update(strings(node.args[2]))
    return codes


def _old_table(cells: list[tuple[str, str, str, str]]) -> str:
    """The table as ``gpunode doctor`` laid it out before (widths by ``len``)."""
    cells = [("STATUS", "AREA", "CHECK", "DETAIL"), *cells]
    widths = [max(len(c[i]) for c in cells) for i in range(3)]
    return "\n".join(
        "  ".join([*(c[i].ljust(widths[i]) for i in range(3)), c[3]]).rstrip() for c in cells
    )


def _unquoted(text: str) -> str:
    for reason in QUOTED_REASONS:
        text = text.replace(reason, " ")
    return text


def test_the_samples_cover_every_code_the_checks_write() -> None:
    written = _written_codes()
    assert len(written) > 20, written
    assert written == {row.code for row in ROWS}


@pytest.mark.parametrize(("row", "english"), CHECKUP_SAMPLES, ids=lambda v: getattr(v, "code", ""))
def test_each_row_reads_in_english_as_the_checks_wrote_it_before(
    row: Row, english: tuple[str, str]
) -> None:
    assert checkup.row_words(row, locale="en") == english


def test_the_english_table_is_laid_out_as_before() -> None:
    old = _old_table([(r.level, r.area, *words) for r, words in CHECKUP_SAMPLES])
    assert checkup.table(ROWS, locale="en") == old
    assert checkup.verdict(ROWS, locale="en") == "doctor: FAILED (fix the FAIL rows)"
    clean = [r for r in ROWS if r.level != "FAIL"]
    assert checkup.verdict(clean, locale="en") == "doctor: all required checks pass"


@pytest.mark.parametrize("locale", ["zh-CN", "en-XA"])
def test_the_table_has_no_english_sentence_but_the_quoted_server_text(locale: str) -> None:
    table = checkup.table(ROWS, locale=locale)
    verdicts = [checkup.verdict(ROWS, locale=locale), checkup.verdict([], locale=locale)]
    english = checkup.table(ROWS, locale="en")

    assert table != english
    assert [english_words(_unquoted(t)) for t in (table, *verdicts)] == [[], [], []]
    for row in ROWS:
        reason = str(row.params.get("reason") or "")
        if reason:
            assert reason in checkup.row_words(row, locale=locale)[1]


def test_the_chinese_table_aligns_its_columns_by_display_width() -> None:
    lines = checkup.table(ROWS, locale="zh-CN").splitlines()
    starts = set()
    for text in lines:
        cells = [c for c in text.split("  ") if c.strip()]
        third = text.index(cells[2])  # the check column (two spaces never occur inside a cell)
        starts.add(display_width(text[:third]))
    assert len(starts) == 1, lines


def test_serve_logs_each_row_in_english_at_its_level(caplog: pytest.LogCaptureFixture) -> None:
    missing = next(r for r in ROWS if r.code == "grant_missing")
    single = next(r for r in ROWS if r.code == "one_replica")
    extra = next(r for r in ROWS if r.code == "grant_extra")
    logger = logging.getLogger("test.doctor")

    with caplog.at_level(logging.INFO, logger="test.doctor"):
        doctor.log_rows([missing, single, extra], logger, checkup.log_line)

    assert [(r.levelno, r.getMessage()) for r in caplog.records] == [
        (
            logging.ERROR,
            "doctor: FAIL grants: missing: create pods/eviction (core) cluster-wide "
            "(the bot needs it)",
        ),
        (logging.INFO, "doctor: ok replicas: one replica on this store"),
        (
            logging.WARNING,
            "doctor: warn grants: extra: get secrets (core) cluster-wide "
            "(no call of the bot needs it)",
        ),
    ]
