"""Each SDK lives in one package; the core stays pure; the collector stays light."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

BOT = Path(__file__).resolve().parents[1] / "bot"

# import root -> packages (relative to bot/) allowed to import it
HOMES: dict[str, tuple[str, ...]] = {
    "kubernetes": ("kube/",),
    # the wiring builds the Bolt app and the Socket Mode handler: it knows the concrete classes
    "slack_bolt": ("slack/", "wiring/", "sandbox/"),
    "slack_sdk": ("slack/", "wiring/", "sandbox/"),
    "jinja2": ("render/",),
    "pynvml": ("collectors/nvml.py",),
    "sqlite3": ("store/",),
    "matplotlib": ("charts/",),
}
CORE_ALLOWED = {
    "__future__",
    "pydantic",
    "bot",
    "typing",
    "dataclasses",
    "datetime",
    "enum",
    "math",
    "decimal",
    "fractions",
    "re",
    "collections",
    "itertools",
    "functools",
    "operator",
    "json",
    "hashlib",
    "hmac",
    "abc",
    "string",
    "textwrap",
    "bisect",
    "types",
    "statistics",
    "shlex",
    "ipaddress",
    "heapq",
    "copy",
    "base64",
}
COLLECTOR_FORBIDDEN = {"kubernetes", "slack_bolt", "slack_sdk", "jinja2", "aiohttp", "yaml"}


def _imports(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.append(node.module)
    return names


def _py_files() -> list[Path]:
    return sorted(BOT.rglob("*.py"))


@pytest.mark.parametrize("sdk", sorted(HOMES))
def test_each_sdk_is_imported_only_in_its_home(sdk: str) -> None:
    offenders = []
    for path in _py_files():
        rel = path.relative_to(BOT).as_posix()
        uses = any(name.split(".")[0] == sdk for name in _imports(path))
        if uses and not any(rel.startswith(home) for home in HOMES[sdk]):
            offenders.append(rel)
    assert offenders == [], f"{sdk} imported outside {HOMES[sdk]}"


def test_core_imports_nothing_that_does_io() -> None:
    offenders = []
    for path in sorted((BOT / "core").rglob("*.py")):
        for name in _imports(path):
            if name.split(".")[0] not in CORE_ALLOWED:
                offenders.append(f"{path.relative_to(BOT)}: {name}")
    assert offenders == []


def test_collectors_import_no_bot_side_sdk() -> None:
    offenders = []
    for path in sorted((BOT / "collectors").rglob("*.py")):
        for name in _imports(path):
            root = name.split(".")[0]
            if root in COLLECTOR_FORBIDDEN or name.startswith(
                ("bot.kube", "bot.slack", "bot.render")
            ):
                offenders.append(f"{path.relative_to(BOT)}: {name}")
    assert offenders == []
