"""The core imports only pure stdlib modules (an allowlist: import-linter can only forbid).

Everything else about layers lives in pyproject.toml's import-linter contracts (each SDK in
one home, the layer order, no sandbox in product code): ``test_import_contracts.py``.
"""

from __future__ import annotations

import ast
from pathlib import Path

BOT = Path(__file__).resolve().parents[1] / "bot"

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


def _imports(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.append(node.module)
    return names


def test_core_imports_nothing_that_does_io() -> None:
    offenders = []
    for path in sorted((BOT / "core").rglob("*.py")):
        for name in _imports(path):
            if name.split(".")[0] not in CORE_ALLOWED:
                offenders.append(f"{path.relative_to(BOT)}: {name}")
    assert offenders == []
