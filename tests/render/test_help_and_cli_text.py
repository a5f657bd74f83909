"""Wording that used to live in Python now lives in templates: the command help,
what to do after a failed diagnosis, and the terminal commands' lines. English is
byte-identical to what the code printed before; every locale has the words."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from bot.core.governance import commands
from bot.core.model.clusters import DEFAULT_CLUSTER
from bot.core.model.incidents import Incident
from bot.render.cli_text import line
from bot.render.environment import DEFAULT_LOCALE, LOCALES
from bot.render.filters import display_width
from bot.render.help import help_text
from bot.services.operations import NodeRank
from tests.render.told import render_notice

OTHER_LOCALES = [loc for loc in LOCALES if loc != DEFAULT_LOCALE]
TOPICS = [None, *commands.VERBS]
#: every code a failed diagnosis reports (bot.errors.DiagnosticJobError's docstring, plus
#: what the gateway maps to KubeError codes) and one nobody planned for
ERROR_CODES = [
    "node_not_found",
    "node_not_ready",
    "image_pull",
    "container_error",
    "create_failed",
    "not_admitted",
    "deadline_exceeded",
    "evidence_unreadable",
    "job_failed",
    "forbidden",
    "timeout",
    "unavailable",
    "something_new",
]


@pytest.mark.parametrize("prog", ["/gpunode", "gpunode"])
@pytest.mark.parametrize("topic", TOPICS)
def test_the_english_help_is_the_grammars_own_help(topic: str | None, prog: str) -> None:
    assert help_text(topic, prog=prog, locale="en") == commands.help_text(topic, prog=prog)


@pytest.mark.parametrize("locale", OTHER_LOCALES)
@pytest.mark.parametrize("topic", TOPICS)
def test_the_help_is_translated_and_keeps_the_commands(topic: str | None, locale: str) -> None:
    ours = help_text(topic, prog="gpunode", locale=locale)
    english = help_text(topic, prog="gpunode", locale="en")
    assert ours != english
    for verb in [topic] if topic else commands.VERBS:
        assert commands.usage(verb, prog="gpunode") in ours  # the commands are not translated


@pytest.mark.parametrize("locale", LOCALES)
def test_every_failure_code_says_what_to_do_in_every_locale(locale: str) -> None:
    said = {}
    for code in ERROR_CODES:
        _, blocks = render_notice("diagnose_failed", locale=locale, reason="r", code=code)
        said[code] = blocks[0]["text"]["text"]
    default = said["something_new"]
    planned = [c for c in ERROR_CODES if c not in ("node_not_found", "job_failed", "unavailable")]
    assert all(said[c] != default for c in planned if c != "something_new")
    if locale != DEFAULT_LOCALE:
        _, english = render_notice("diagnose_failed", reason="r", code="image_pull")
        assert said["image_pull"] != english[0]["text"]["text"]


def test_a_callers_own_instruction_still_wins() -> None:
    _, blocks = render_notice("diagnose_failed", reason="r", code="image_pull", what_to_do="<x>")
    assert blocks[0]["text"]["text"].endswith("&lt;x&gt;")


AT = datetime(2026, 3, 1, 2, 3, tzinfo=UTC)
INCIDENT = Incident(
    id="INC-0007",
    number=7,
    node="gpu-node-01",
    opened_at=AT,
    opened_by="U1",
    state="mitigating",
    cluster=DEFAULT_CLUSTER,
)
RANK = NodeRank("gpu-node-01", True, 99, None, 92, 1.0, "default")


@pytest.mark.parametrize(
    ("name", "args", "printed"),
    [
        ("no_open_incidents", (None,), "no open incidents"),
        ("no_open_incidents", ("gpu-node-01",), "no open incidents for gpu-node-01"),
        (
            "status_line",
            (INCIDENT,),
            "INC-0007  gpu-node-01              mitigating    opened 2026-03-01 02:03 UTC",
        ),
        ("resolved", ("INC-0007",), "INC-0007 resolved"),
        ("no_gpu_nodes", (), "no GPU nodes found"),
        ("top_header", (), "NODE                        PRESSURE   USED%  LIMITS%  REQUESTS%"),
        (
            "top_line",
            (RANK, "92", "-", "99"),
            "gpu-node-01                 yes           92        -         99",
        ),
    ],
)
def test_the_terminal_lines_print_as_before_in_english(
    name: str, args: tuple[object, ...], printed: str
) -> None:
    assert line(name, *args, locale="en") == printed


@pytest.mark.parametrize("locale", [*OTHER_LOCALES, "en-XA"])
def test_the_terminal_lines_and_the_top_heads_are_translated_and_the_columns_align(
    locale: str,
) -> None:
    assert line("no_open_incidents", None, locale=locale) != "no open incidents"
    assert "INC-0007 " in line("resolved", "INC-0007", locale=locale)
    assert "gpu-node-01" in line("status_line", INCIDENT, locale=locale)
    header = line("top_header", locale=locale)
    row = line("top_line", RANK, "92", "-", "99", locale=locale)
    # the heads are words too (`--lang en` keeps them for scripts)
    assert header != line("top_header", locale="en")

    # NODE and PRESSURE start, the three percentages end, at the same display column in the
    # head and in a row (a CJK character takes two columns)
    def spans(text: str) -> list[tuple[int, int]]:
        out, at = [], 0
        for word in text.split():
            at = text.index(word, at)
            start = display_width(text[:at])
            out.append((start, start + display_width(word)))
            at += len(word)
        return out

    heads, cells = spans(header), spans(row)
    assert len(heads) == len(cells) == 5
    assert [h[0] for h in heads[:2]] == [c[0] for c in cells[:2]]
    assert [h[1] for h in heads[2:]] == [c[1] for c in cells[2:]]
