"""A user value in a log message can never forge a log line or drive the terminal."""

from __future__ import annotations

import io
import logging

import pytest

from bot.logs import FORMAT, OneLineFormatter, configure_logging, escape_controls

FORGED = "gpu-node-01\n1999-01-01 10:00:00,000 CRITICAL gpunode all nodes compromised"


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        ("a\nb", "a\\nb"),
        ("a\rb", "a\\rb"),
        ("\x1b[2J", "\\x1b[2J"),
        ("tab\there", "tab\\there"),
        ("nul\x00", "nul\\x00"),
        ("line\u2028sep", "line\\u2028sep"),
        ("c1\x85", "c1\\x85"),
        ("plain ünïcode ✓", "plain ünïcode ✓"),
    ],
    ids=[
        "newline",
        "carriage-return",
        "escape-sequence",
        "tab",
        "nul",
        "line-separator",
        "c1-next-line",
        "plain",
    ],
)
def test_control_characters_are_escaped(value: str, shown: str) -> None:
    assert escape_controls(value) == shown


def _logged(*args: object, exc: BaseException | None = None) -> str:
    out = io.StringIO()
    handler = logging.StreamHandler(out)
    handler.setFormatter(OneLineFormatter(FORMAT))
    log = logging.getLogger("gpunode.test.logs")
    log.addHandler(handler)
    log.propagate = False
    try:
        if exc is None:
            log.warning("alert for node %s", *args)
        else:
            try:
                raise exc
            except type(exc):
                log.exception("alert for node %s", *args)
    finally:
        log.removeHandler(handler)
    return out.getvalue()


def test_a_newline_in_a_value_does_not_start_a_new_record() -> None:
    text = _logged(FORGED)

    assert text.count("\n") == 1  # the record's own line end
    assert "CRITICAL" in text and not any(
        line.startswith("1999-01-01") for line in text.splitlines()
    )


def test_traceback_lines_are_indented_so_none_passes_for_a_record() -> None:
    text = _logged("n1", exc=ValueError(FORGED))

    head, *rest = text.rstrip("\n").split("\n")
    assert "alert for node n1" in head
    assert rest and all(line.startswith("    ") for line in rest)
    assert any("CRITICAL" in line for line in rest)


def test_serve_logs_through_the_one_line_formatter() -> None:
    root = logging.getLogger()
    saved, level = list(root.handlers), root.level
    try:
        handler = configure_logging("INFO")
        assert root.handlers == [handler]
        assert isinstance(handler.formatter, OneLineFormatter)
    finally:
        for h in list(root.handlers):
            root.removeHandler(h)
        for h in saved:
            root.addHandler(h)
        root.setLevel(level)
