"""The import-linter contracts hold on the tree, and they catch a planted violation.

``lint-imports`` runs in ``make lint`` too; here it also runs against a copy of ``bot/`` with
one forbidden import added, so a contract that silently stopped matching would fail a test.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")


def _lint_imports(root: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(LINT_IMPORTS), "--config", str(root / "pyproject.toml"), "--no-cache"],
        cwd=root,
        env={"PATH": "", "PYTHONPATH": str(root), "HOME": str(root)},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


#: the packages the contracts speak of: the product and, once it is its own package, the sandbox
PACKAGES = ("bot", "gpunode_sandbox")


def _tree_with(tmp_path: Path, module: str, line: str) -> Path:
    """A copy of pyproject.toml and the packages where ``module`` (a path from the repository
    root) gains ``line``."""
    shutil.copy(REPO / "pyproject.toml", tmp_path / "pyproject.toml")
    ignore = shutil.ignore_patterns("__pycache__")
    for package in PACKAGES:
        if (REPO / package).is_dir():
            shutil.copytree(REPO / package, tmp_path / package, ignore=ignore)
    target = tmp_path / module
    target.write_text(target.read_text(encoding="utf-8") + f"\n{line}\n", encoding="utf-8")
    return tmp_path


def test_every_import_contract_is_kept_by_the_tree() -> None:
    result = _lint_imports(REPO)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 broken" in result.stdout


@pytest.mark.parametrize(
    ("module", "line", "contract"),
    [
        ("bot/core/diagnosis/memory.py", "import bot.kube.gateway", "The core does no I/O"),
        ("bot/core/diagnosis/memory.py", "import aiohttp", "The core does no I/O"),
        ("bot/services/act.py", "import kubernetes.client", "kubernetes only in bot.kube"),
        (
            "bot/render/views.py",
            "import gpunode_sandbox.story",
            "No product module imports the sandbox",
        ),
        ("bot/kube/objects.py", "import bot.store.storing", "The adapters do not know each other"),
        ("bot/store/db.py", "import bot.services.ports", "Layers"),
        ("bot/collectors/procfs.py", "import yaml", "The collector stays light"),
        ("bot/services/act.py", "import sqlite3", "jinja2, sqlite3, matplotlib stay home"),
        ("bot/collectors/procfs.py", "import pynvml", "pynvml only in bot.collectors.nvml"),
        ("bot/services/act.py", "import slack_sdk", "Slack SDKs only in bot.slack"),
        (
            "bot/services/act.py",
            "import prometheus_client",
            "prometheus_client only in bot.telemetry",
        ),
        (
            "gpunode_sandbox/kubesim/kubelet.py",
            "import bot.core.diagnosis.allocation",
            "The stand-ins are an independent check",
        ),
        (
            "bot/telemetry/wiring.py",
            "import bot.kube.gateway",
            "The adapters do not know each other",
        ),
        (
            "bot/slack/interactions.py",
            "import bot.slack.app",
            "The slash command and the buttons do not import each other",
        ),
        # "The use cases speak data ... in bot.services": lint-imports wraps that long name,
        # so its BROKEN line starts with the name's last words
        ("bot/services/diagnose.py", "import bot.render.blocks", "bot.services"),
        ("bot/services/clusters.py", "import bot.config", "bot.services"),
        ("bot/services/postmortem.py", "import bot.charts", "bot.services"),
        ("bot/services/doctor.py", "import bot.store.engines", "bot.services"),
    ],
)
def test_a_planted_forbidden_import_breaks_its_contract(
    tmp_path: Path, module: str, line: str, contract: str
) -> None:
    result = _lint_imports(_tree_with(tmp_path, module, line))
    assert result.returncode != 0
    broken = [ln for ln in result.stdout.splitlines() if " BROKEN" in ln]
    assert any(ln.startswith(contract) for ln in broken), result.stdout
