"""The Slack package only translates: the use cases live in ``bot.services``, and the
slash-command module and the buttons module do not import each other."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SLACK = Path(__file__).resolve().parents[2] / "bot" / "slack"


def _imported(module: str) -> set[str]:
    tree = ast.parse((SLACK / f"{module}.py").read_text(encoding="utf-8"))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
            names |= {f"{node.module}.{a.name}" for a in node.names}
    return names


def _defined(module: str) -> set[str]:
    tree = ast.parse((SLACK / f"{module}.py").read_text(encoding="utf-8"))
    return {
        n.name
        for n in tree.body
        if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
    }


@pytest.mark.parametrize(("module", "other"), [("app", "interactions"), ("interactions", "app")])
def test_app_and_interactions_do_not_import_each_other(module: str, other: str) -> None:
    assert not {n for n in _imported(module) if n.startswith(f"bot.slack.{other}")}


@pytest.mark.parametrize(
    "use_case",
    [
        "permitted",
        "upload_timeline",
        "BotServices",
        "report_malformed",
        "_note_reply",
        "mentioned_in",
        "handle",
        "ChatSurface",
    ],
)
def test_the_use_cases_are_not_defined_in_the_slack_package(use_case: str) -> None:
    for path in sorted(SLACK.glob("*.py")):
        assert use_case not in _defined(path.stem), f"{use_case} defined in {path.name}"
