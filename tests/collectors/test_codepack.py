"""The Job's code pack serves the collector's modules from one file, and only while it is
true to their sources: a stale, foreign or broken pack costs time, never a wrong module.

Each test builds a pack for a copy of ``bot/`` in a temporary folder (the checkout's own pack,
if any, is left alone) and runs what the Job runs there, in a fresh interpreter."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from bot.collectors import codepack, native

REPO = Path(__file__).resolve().parents[2]
HOST = REPO / "tests" / "fixtures" / "hosts" / "v2-systemd-containerd"
C_LOADER = "ExtensionFileLoader"

#: what bot/__main__.py does for the Job before it runs ``collect``, then where each ``bot``
#: module came from: "pack" or the ordinary import's loader
PROBE = """
import json, sys
home = sys.argv[1]
sys.path.insert(0, home)
from bot.collectors.codepack import PackFinder, install
installed = install(home)
import bot.collectors.cli
import bot.collectors.options
print(json.dumps({
    "installed": installed,
    "options_marker": getattr(bot.collectors.options, "MARKER", None),
    "loaders": {
        name: "pack" if isinstance(module.__spec__.loader, PackFinder)
        else type(module.__spec__.loader).__name__
        for name, module in sys.modules.items() if name == "bot" or name.startswith("bot.")
    },
    "files": {
        name: module.__file__
        for name, module in sys.modules.items() if name.startswith("bot.collectors.")
    },
}))
"""


@pytest.fixture
def home(tmp_path: Path) -> str:
    """A copy of this checkout's ``bot`` package, the folder that holds it returned."""
    shutil.copytree(REPO / "bot", tmp_path / "bot", ignore=shutil.ignore_patterns("__pycache__"))
    return str(tmp_path)


def _probe(home: str) -> dict[str, object]:
    run = subprocess.run(
        [sys.executable, "-I", "-S", "-c", PROBE, home],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    result: dict[str, object] = json.loads(run.stdout)
    return result


def _job(home: str) -> subprocess.CompletedProcess[bytes]:
    script = f"{home}/bot/__main__.py"
    command = ["collect", "--root", str(HOST), "--format", "json", "--node-name", "n"]
    return subprocess.run(
        [sys.executable, "-I", "-S", script, *command], capture_output=True, timeout=60
    )


def _same_moment(stdout: bytes) -> dict[str, object]:
    doc: dict[str, object] = json.loads(stdout)
    doc.pop("collected_at"), doc.pop("duration_s")
    return doc


def test_every_bot_module_the_jobs_run_imports_after_the_finder_comes_from_the_pack(
    home: str,
) -> None:
    codepack.build(home)
    probe = _probe(home)
    loaders = probe["loaders"]
    assert probe["installed"] is True and isinstance(loaders, dict)
    # imported before the pack can be read: the package, its parent and the finder itself
    before = {"bot", "bot.collectors", "bot.collectors.codepack"}
    assert {name for name, loader in loaders.items() if loader not in ("pack", C_LOADER)} == before
    # a C module (the statm loop, where built) is no source: the ordinary import loads it
    c_modules = (
        {"bot.collectors._statm"}
        if native.target(Path(home) / "bot/collectors").exists()
        else set()
    )
    assert {name for name, loader in loaders.items() if loader == C_LOADER} == c_modules
    assert {"bot.collectors.procfs", "bot.collectors.kmsg", "bot.errorbase"} <= set(loaders)
    files = probe["files"]
    assert isinstance(files, dict)
    assert files["bot.collectors.procfs"] == f"{home}/bot/collectors/procfs.py"


def test_the_jobs_run_writes_the_same_bundle_with_the_pack_as_without(home: str) -> None:
    without = _job(home)
    codepack.build(home)
    assert _probe(home)["installed"] is True
    with_pack = _job(home)
    assert without.returncode == with_pack.returncode == 0, with_pack.stderr
    assert _same_moment(with_pack.stdout) == _same_moment(without.stdout)


def test_a_module_changed_since_the_pack_was_built_is_imported_from_its_source(
    home: str,
) -> None:
    codepack.build(home)
    options = Path(home) / "bot" / "collectors" / "options.py"
    options.write_text(options.read_text(encoding="utf-8") + "\nMARKER = 1\n", encoding="utf-8")
    probe = _probe(home)
    loaders = probe["loaders"]
    assert isinstance(loaders, dict)
    assert probe["options_marker"] == 1
    assert loaders["bot.collectors.options"] == "SourceFileLoader"
    assert loaders["bot.collectors.procfs"] == "pack"  # the rest is still served


def test_a_source_touched_in_a_later_second_is_imported_from_it_and_nanoseconds_do_not_count(
    home: str,
) -> None:
    """Same size, another second: stale (a .pyc's rule). Same second, other nanoseconds (an
    image layer's archive may drop them): still the pack's."""
    codepack.build(home)
    options = Path(home) / "bot" / "collectors" / "options.py"
    procfs = Path(home) / "bot" / "collectors" / "procfs.py"
    seconds = options.stat().st_mtime_ns // 1_000_000_000
    os.utime(options, ns=(0, (seconds + 5) * 1_000_000_000))
    seconds = procfs.stat().st_mtime_ns // 1_000_000_000
    os.utime(procfs, ns=(0, seconds * 1_000_000_000))
    loaders = _probe(home)["loaders"]
    assert isinstance(loaders, dict)
    assert loaders["bot.collectors.options"] == "SourceFileLoader"
    assert loaders["bot.collectors.procfs"] == "pack"


@pytest.mark.parametrize(
    "spoil",
    [
        pytest.param(lambda data: b"\0\0\r\n" + data[4:], id="another-bytecode-version"),
        pytest.param(lambda data: data[: len(data) // 2], id="truncated"),
        pytest.param(lambda data: data[:4] + b"not marshal", id="garbled"),
        pytest.param(lambda data: b"", id="empty"),
    ],
)
def test_a_pack_that_is_not_whole_or_not_for_this_interpreter_is_not_used(
    home: str, spoil: object
) -> None:
    path = Path(codepack.build(home))
    path.write_bytes(spoil(path.read_bytes()))  # type: ignore[operator]
    probe = _probe(home)
    loaders = probe["loaders"]
    assert probe["installed"] is False and isinstance(loaders, dict)
    assert "pack" not in loaders.values()
    assert _job(home).returncode == 0


def test_a_pack_built_for_another_folder_is_not_used(home: str, tmp_path: Path) -> None:
    codepack.build(home)
    moved = tmp_path / "moved"
    shutil.copytree(Path(home) / "bot", moved / "bot")  # the pack travels with the tree
    assert codepack.read_pack(str(moved)) is None
    assert _probe(str(moved))["installed"] is False


def test_without_a_pack_the_finder_is_not_installed_and_the_job_runs(home: str) -> None:
    assert codepack.install(home) is False
    assert _probe(home)["installed"] is False
    assert _job(home).returncode == 0


def test_a_pack_needs_the_absolute_folder_of_bot() -> None:
    with pytest.raises(ValueError, match="absolute"):
        codepack.build("relative/home")
