"""The slim collector image (Dockerfile target ``collector``) holds exactly what ``gpunode
collect`` imports, and that set collects a full bundle with no third-party package at all.

No Docker engine runs here: the image's file set is rebuilt in a temporary folder from the
Dockerfile's own COPY lines and run with an interpreter that sees nothing else (``-S``: no
site-packages, so not even pydantic or pynvml; NVML then becomes a recorded gap)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from bot.collectors import native
from bot.core.model.evidence import EvidenceBundle

REPO = Path(__file__).resolve().parents[2]
HOST = REPO / "tests" / "fixtures" / "hosts" / "v2-systemd-containerd"
COLLECT = ["collect", "--root", str(HOST), "--format", "json", "--node-name", "slim"]


def _collector_stage() -> list[str]:
    text = re.sub(r"\\\n", " ", (REPO / "Dockerfile").read_text(encoding="utf-8"))
    stage: list[str] = []
    inside = False
    for line in text.splitlines():
        line = line.strip()
        if line.upper().startswith("FROM "):
            inside = line.endswith(" AS collector")
            continue
        if inside and line and not line.startswith("#"):
            stage.append(line)
    assert stage, "the Dockerfile has no `collector` stage"
    return stage


def copied_files() -> set[str]:
    """Repository paths the collector stage copies (``/src/`` is the builder's checkout; the
    ``native`` stage's ``/native/`` is the C module ``python -m bot.collectors.native``
    builds, here the one ``make setup`` built in place, when this machine could)."""
    files: set[str] = set()
    for line in _collector_stage():
        words = line.split()
        if words[0].upper() != "COPY":
            continue
        sources = [w for w in words[1:-1] if not w.startswith("--")]
        if "--from=native" in words:
            assert sources == ["/native/"], line
            built = native.target()
            files |= {str(built.relative_to(REPO))} if built.exists() else set()
            continue
        for source in sources:
            path = REPO / source.removeprefix("/src/")
            if path.is_dir():
                files |= {str(p.relative_to(REPO)) for p in path.rglob("*.py")}
            else:
                files.add(str(path.relative_to(REPO)))
    return files


def _imports_of_collect() -> tuple[set[str], set[str]]:
    """(repository files of the bot modules, third-party top-level modules) that a real
    collect run imports the way the diagnostic Job starts it (``python -I -m bot collect``),
    measured in a fresh interpreter."""
    probe = (
        "import sys, json, runpy\n"
        "import contextlib, io\n"
        f"sys.argv = ['bot', *{COLLECT!r}]\n"
        "with contextlib.redirect_stdout(io.StringIO()), contextlib.suppress(SystemExit):\n"
        "    runpy.run_module('bot', run_name='__main__', alter_sys=True)\n"
        "import bot.collectors.nvml\n"
        "mods = {m: getattr(sys.modules[m], '__file__', None) for m in list(sys.modules)}\n"
        "print(json.dumps(mods))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    ).stdout
    modules: dict[str, str | None] = json.loads(out.splitlines()[-1])
    bot_files = {
        str(Path(f).resolve().relative_to(REPO))
        for m, f in modules.items()
        if (m == "bot" or m.startswith("bot.")) and f
    }
    # runpy ran bot/__main__.py as ``__main__``, so sys.modules does not list it by its name
    bot_files.add("bot/__main__.py")
    third = {
        m.split(".")[0]
        for m in modules
        if m.split(".")[0] not in sys.stdlib_module_names and m.split(".")[0] != "bot"
    }
    return bot_files, third


def test_the_collector_stage_copies_the_import_closure_of_gpunode_collect() -> None:
    bot_files, third_party = _imports_of_collect()
    copied = copied_files()
    missing = bot_files - copied
    assert missing == set(), f"the collector image lacks {sorted(missing)}"
    extra = {f for f in copied - bot_files if not f.startswith("bot/collectors/")}
    assert extra == set(), f"the collector image carries modules collect never imports: {extra}"
    # the standard library and NVML's bindings (imported only when a GPU is there)
    assert third_party <= {"_distutils_hack", "pynvml", "__main__"}
    assert any("pip install" in line and "nvidia-ml-py" in line for line in _collector_stage())


@pytest.fixture
def slim_tree(tmp_path: Path) -> Path:
    for rel in copied_files():
        target = tmp_path / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(REPO / rel, target)
    return tmp_path


def test_the_slim_file_set_collects_a_bundle_without_any_third_party_package(
    slim_tree: Path,
) -> None:
    done = subprocess.run(
        [sys.executable, "-S", "-m", "bot", *COLLECT],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=slim_tree,
        env={"PYTHONPATH": str(slim_tree), "PATH": os.environ.get("PATH", "")},
    )
    assert done.returncode == 0, done.stderr
    bundle = EvidenceBundle.model_validate_json(done.stdout)
    assert bundle.node_name == "slim" and bundle.processes
    assert any(g.source == "nvml" for g in bundle.gaps)  # no pynvml in this tree: a gap


def test_the_collector_stage_reaches_its_code_without_pythonpath_which_python_dash_i_ignores(
    slim_tree: Path, tmp_path: Path
) -> None:
    """The Job and the agent run ``python -I -m bot``, which ignores PYTHONPATH: the stage's
    own .pth line, run in a bare virtualenv, makes the copied tree importable under -I."""
    stage = _collector_stage()
    assert not any("PYTHONPATH" in line for line in stage if line.upper().startswith("ENV "))
    destinations = {line.split()[-1] for line in stage if line.upper().startswith("COPY ")}
    assert destinations and all(d.startswith("/opt/gpunode/bot/") for d in destinations)
    pth = [
        m for line in stage for m in re.findall(r'python -c "([^"]*getsitepackages[^"]*)"', line)
    ]
    assert len(pth) == 1 and "/opt/gpunode" in pth[0], stage

    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = str(venv / "bin" / "python")
    bare = {"PATH": os.environ.get("PATH", "")}

    def job() -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [python, "-I", "-m", "bot", *COLLECT],
            capture_output=True,
            text=True,
            timeout=120,
            cwd="/",
            env={**bare, "PYTHONPATH": str(slim_tree)},
        )

    before = job()
    assert before.returncode != 0 and "No module named bot" in before.stderr
    code = pth[0].replace("/opt/gpunode", str(slim_tree))
    subprocess.run([python, "-c", code], check=True, env=bare, timeout=60)
    after = job()
    assert after.returncode == 0, after.stderr
    assert EvidenceBundle.model_validate_json(after.stdout).node_name == "slim"


def test_the_jobs_own_command_collects_from_the_stage_folder_and_nothing_else(
    slim_tree: Path, tmp_path: Path
) -> None:
    """The Job runs ``python -I -S /opt/gpunode/bot/__main__.py collect``: no site-packages,
    no PYTHON* variable, no current directory; the file puts its own tree on the path. A
    ``bot`` package on PYTHONPATH or in the working directory is never the one imported."""
    from bot.config import KubeSettings
    from bot.kube.jobs import build_job

    job = build_job(KubeSettings(), "gpu-node-01", "abc123")
    command = job["spec"]["template"]["spec"]["containers"][0]["command"]
    assert command[:5] == ["python", "-I", "-S", "/opt/gpunode/bot/__main__.py", "collect"]
    # NVML's bindings must be where that command looks: the stage installs them there
    assert any(
        "pip install" in line and "--target /opt/gpunode" in line and "nvidia-ml-py" in line
        for line in _collector_stage()
    )
    decoy = tmp_path / "decoy" / "bot"
    decoy.mkdir(parents=True)
    (decoy / "__init__.py").write_text("raise SystemExit('the decoy bot was imported')\n")
    script = str(slim_tree / "bot" / "__main__.py")
    done = subprocess.run(
        [sys.executable, *command[1:3], script, *COLLECT],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=decoy.parent,
        env={"PATH": os.environ.get("PATH", ""), "PYTHONPATH": str(decoy.parent)},
    )
    assert done.returncode == 0, done.stderr
    bundle = EvidenceBundle.model_validate_json(done.stdout)
    assert bundle.node_name == "slim" and bundle.processes


def test_the_collector_stage_byte_compiles_its_code_for_a_read_only_root() -> None:
    """PYTHONDONTWRITEBYTECODE and the Job's read-only root: without a compile step in the
    image, every collection would compile every module again before reading a file."""
    stage = _collector_stage()
    assert any("PYTHONDONTWRITEBYTECODE=1" in line for line in stage)
    assert any("compileall" in line and "/opt/gpunode" in line for line in stage)


def _stage(name: str) -> list[str]:
    text = re.sub(r"\\\n", " ", (REPO / "Dockerfile").read_text(encoding="utf-8"))
    lines = [line.strip() for line in text.splitlines()]
    start = next(i for i, line in enumerate(lines) if line.endswith(f" AS {name}"))
    end = next((i for i in range(start + 1, len(lines)) if lines[i].startswith("FROM ")), None)
    return [line for line in lines[start:end] if line and not line.startswith("#")]


def test_the_native_stage_builds_the_c_module_from_its_source_for_the_collectors_python() -> None:
    """The C module is compiled by ``bot.collectors.native`` from the very files the
    repository holds, by the same Python minor version as the collector stage runs, and the
    image fails to build without it (``ls`` of the module, then the collector's own check)."""
    stage = _stage("native")
    assert stage[0] == "FROM python:3.11 AS native"
    assert _stage("collector")[0] == "FROM python:3.11-slim AS collector"
    copied = {w for line in stage if line.startswith("COPY ") for w in line.split()[1:-1]}
    assert {"bot/collectors/native.py", "bot/collectors/_statm.c"} <= copied
    assert all((REPO / path).is_file() for path in copied)
    [run] = [line for line in stage if line.startswith("RUN ")]
    assert "python -m bot.collectors.native /native" in run and "ls /native/_statm." in run
    assert any("assert procfs.NATIVE_RANK" in line for line in _collector_stage())
