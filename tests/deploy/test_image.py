"""What the image does, done without Docker: build the wheel, install it, run it.

The wheel is built from this tree with hatchling (no build isolation, so no index is needed),
installed with ``--no-deps`` into a fresh virtual environment whose dependencies come from the
project's .venv through a path file, so nothing is downloaded and the ``bot`` package that
runs is the one inside the wheel, not this checkout. That proves the wheel carries the code,
the templates (as ``bot/_templates``) and the ``gpunode`` entry point.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import sysconfig
import venv
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.slow


def _run(cmd: list[str], *, cwd: Path, env: dict[str, str] | None = None) -> str:
    result = subprocess.run(
        cmd, cwd=cwd, capture_output=True, text=True, timeout=240, check=False, env=env
    )
    assert result.returncode == 0, f"{cmd}: {result.stdout}\n{result.stderr}"
    return result.stdout


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    pytest.importorskip("hatchling", reason="hatchling (the build backend) is not installed")
    out = tmp_path_factory.mktemp("wheel")
    _run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "--no-index",
            "-q",
            "-w",
            str(out),
            str(REPO),
        ],
        cwd=out,
    )
    (built,) = out.glob("gpunode-*.whl")
    return built


@pytest.fixture(scope="module")
def installed(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    env_dir = tmp_path_factory.mktemp("venv") / "env"
    venv.EnvBuilder(with_pip=False).create(env_dir)
    python = env_dir / "bin" / "python"
    site = Path(
        _run(
            [str(python), "-c", "import sysconfig;print(sysconfig.get_paths()['purelib'])"],
            cwd=env_dir,
        ).strip()
    )
    # Dependencies from the project's environment, after the fresh site-packages.
    (site / "_deps_from_project_venv.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    _run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--no-deps",
            "--no-index",
            "-q",
            "--target",
            str(site),
            str(wheel),
        ],
        cwd=env_dir,
    )
    # pip --target does not write console scripts; make the one the image relies on.
    script = env_dir / "bin" / "gpunode"
    script.write_text(f"#!{python}\nimport sys\nfrom bot.cli import main\nsys.exit(main())\n")
    script.chmod(0o755)
    return env_dir


def _clean_env() -> dict[str, str]:
    return {
        k: v for k, v in os.environ.items() if k != "PYTHONPATH" and not k.startswith("GPUNODE_")
    }


def test_wheel_carries_every_template_under_bot_templates(wheel: Path) -> None:
    names = set(zipfile.ZipFile(wheel).namelist())
    sources = sorted(p for p in (REPO / "templates").rglob("*") if p.is_file())
    if not sources:
        pytest.skip("templates/ holds no files yet")
    for path in sources:
        assert f"bot/_templates/{path.relative_to(REPO / 'templates').as_posix()}" in names
    assert not any(n.startswith(("tests/", "deploy/", "bench/")) for n in names)


def test_wheel_declares_the_gpunode_entry_point(wheel: Path) -> None:
    archive = zipfile.ZipFile(wheel)
    (entry_points,) = [n for n in archive.namelist() if n.endswith(".dist-info/entry_points.txt")]
    assert "gpunode = bot.cli:main" in archive.read(entry_points).decode()


def test_installed_bot_package_is_the_wheel_not_the_checkout(installed: Path) -> None:
    out = _run(
        [str(installed / "bin" / "python"), "-c", "import bot;print(bot.__file__)"],
        cwd=installed,
        env=_clean_env(),
    )
    assert str(installed) in out and str(REPO) not in out


def test_gpunode_help_runs_from_the_installed_wheel(installed: Path) -> None:
    out = _run([str(installed / "bin" / "gpunode"), "--help"], cwd=installed, env=_clean_env())
    for command in ("collect", "diagnose", "serve", "demo"):
        assert command in out


def test_templates_load_from_the_installed_package(installed: Path) -> None:
    code = (
        "import importlib.resources as r, json;"
        "root = r.files('bot') / '_templates';"
        "print(json.dumps(sorted(str(p) for p in root.iterdir()) if root.is_dir() else None))"
    )
    out = _run([str(installed / "bin" / "python"), "-c", code], cwd=installed, env=_clean_env())
    listed = json.loads(out)
    if not any(p.is_file() for p in (REPO / "templates").rglob("*")):
        pytest.skip("templates/ holds no files yet")
    assert listed, "bot/_templates missing from the installed package"
    job = REPO / "templates" / "kube" / "diagnostic-job.yaml.j2"
    if job.exists():
        check = (
            "import importlib.resources as r;"
            "print((r.files('bot') / '_templates/kube/diagnostic-job.yaml.j2').is_file())"
        )
        assert (
            _run(
                [str(installed / "bin" / "python"), "-c", check], cwd=installed, env=_clean_env()
            ).strip()
            == "True"
        )


def test_gpunode_collect_prints_an_evidence_bundle_on_this_machine(installed: Path) -> None:
    out = _run(
        [
            str(installed / "bin" / "gpunode"),
            "collect",
            "--format",
            "json",
            "--node-name",
            "image-test",
        ],
        cwd=installed,
        env=_clean_env(),
    )
    bundle = json.loads(out)
    assert isinstance(bundle, dict) and bundle
