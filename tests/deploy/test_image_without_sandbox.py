"""The production wheel, built from a tree that holds ``gpunode_sandbox/``, leaves it out; it
imports and runs without the sandbox, and the sandbox's commands refuse clearly there."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

from bot.cli.main import SANDBOX_MISSING

REPO = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def image_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """gpunode's wheel without the sandbox, unpacked into a site dir (dependencies: the venv's)."""
    src = tmp_path_factory.mktemp("src")
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(REPO / name, src / name)
    ignore = shutil.ignore_patterns("__pycache__")
    for tree in ("bot", "gpunode_sandbox", "templates", "locales", "deploy/base"):
        shutil.copytree(REPO / tree, src / tree, ignore=ignore)
    wheels, site = tmp_path_factory.mktemp("wheels"), tmp_path_factory.mktemp("site")
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "-q"]
    subprocess.run(
        [*pip, "wheel", "--no-deps", "--no-build-isolation", "-w", str(wheels), str(src)],
        check=True,
        timeout=300,
    )
    [wheel] = wheels.glob("gpunode-*.whl")
    subprocess.run(
        [*pip, "install", "--no-deps", "--no-index", "--target", str(site), str(wheel)],
        check=True,
        timeout=300,
    )
    assert not (site / "gpunode_sandbox").exists()
    assert not any(n.startswith("gpunode_sandbox") for n in zipfile.ZipFile(wheel).namelist())
    return site


def _run(site: Path, *args: str) -> subprocess.CompletedProcess[str]:
    # -S: no site hooks, so the venv's editable install (a .pth naming the checkout, where
    # gpunode_sandbox lives) does not leak in; the dependencies come from the venv's
    # site-packages directory itself, as the image's do.
    deps = sysconfig.get_paths()["purelib"]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), deps]), "HOME": str(site)}
    return subprocess.run(
        [sys.executable, "-S", *args],
        env=env,
        cwd=site,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_the_wheel_is_the_one_imported(image_site: Path) -> None:
    result = _run(image_site, "-c", "import bot; print(bot.__file__)")
    assert result.stdout.strip() == str(image_site / "bot" / "__init__.py")


def test_every_product_module_imports_without_the_sandbox(image_site: Path) -> None:
    code = (
        "import importlib, pkgutil, bot\n"
        "mods = pkgutil.walk_packages(bot.__path__, 'bot.')\n"
        "names = [m.name for m in mods if m.name != 'bot.__main__']  # that one runs the CLI\n"
        "for n in names: importlib.import_module(n)\n"
        "print(len(names))"
    )
    result = _run(image_site, "-c", code)
    assert result.returncode == 0, result.stderr
    assert int(result.stdout) > 100


@pytest.mark.parametrize(
    "argv", [["demo", "--script"], ["sandbox", "kube"]], ids=["demo", "sandbox"]
)
def test_the_sandbox_commands_say_the_image_has_no_sandbox(
    image_site: Path, argv: list[str]
) -> None:
    result = _run(image_site, "-m", "bot", *argv)
    assert result.returncode == 2  # a command this install cannot run: a usage error
    expected = SANDBOX_MISSING.format(command=argv[0])
    assert result.stderr.strip() == f"gpunode: {expected}"


def test_collect_with_a_fake_gpu_is_refused_and_without_one_runs(
    image_site: Path, tmp_path: Path
) -> None:
    root = tmp_path / "host"
    (root / "proc").mkdir(parents=True)
    spec = tmp_path / "nvml.json"
    spec.write_text("{}", encoding="utf-8")
    refused = _run(
        image_site, "-m", "bot", "collect", "--root", str(root), "--fake-nvml", str(spec)
    )
    assert refused.returncode == 1
    assert "this image has no sandbox" in refused.stderr
    ran = _run(image_site, "-m", "bot", "collect", "--root", str(root), "--format", "json")
    assert ran.returncode == 0, ran.stderr
    assert '"gaps"' in ran.stdout  # an empty host is read as gaps, not a crash
