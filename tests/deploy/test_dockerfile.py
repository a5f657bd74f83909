"""Static checks of the Dockerfile (no Docker engine runs in CI or here)."""

from __future__ import annotations

import json
import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
DOCKERFILE = REPO / "Dockerfile"


def _stages() -> list[list[str]]:
    """Instructions per stage, continuation lines joined, comments dropped."""
    text = re.sub(r"\\\n", " ", DOCKERFILE.read_text(encoding="utf-8"))
    stages: list[list[str]] = []
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        if line.upper().startswith("FROM "):
            stages.append([])
        stages[-1].append(line)
    return stages


def _instructions(stage: list[str], name: str) -> list[str]:
    return [i.split(None, 1)[1] for i in stage if i.split(None, 1)[0].upper() == name]


def test_image_is_multi_stage_on_python_311_slim() -> None:
    """Every stage runs CPython 3.11; every stage but ``native`` is the slim image. That one
    has the compiler and headers for the collector's C module, and only the module leaves it
    (tests/deploy/test_collector_image.py)."""
    stages = _stages()
    assert len(stages) >= 2
    for stage in stages:
        image = stage[0].split()[1]
        assert image == ("python:3.11" if stage[0].endswith(" AS native") else "python:3.11-slim")
    assert stages[0][0].endswith(" AS builder")
    copied_from_native = [
        c for stage in stages for c in _instructions(stage, "COPY") if "--from=native" in c
    ]
    assert copied_from_native == ["--from=native /native/ /opt/gpunode/bot/collectors/"]


def test_final_stage_runs_as_a_numeric_non_root_user() -> None:
    (user,) = _instructions(_stages()[-1], "USER")
    uid = user.split(":")[0]
    assert uid.isdigit() and int(uid) == 10001


def test_final_stage_has_no_build_tools_and_no_sources() -> None:
    final = _stages()[-1]
    text = "\n".join(final)
    for tool in ("gcc", "build-essential", "make ", "git "):
        assert tool not in text, tool
    # the one Debian package the runtime needs is a font (Chinese charts), nothing to build with
    for run in _instructions(final, "RUN"):
        if "apt-get install" in run:
            packages = run.split("apt-get install", 1)[1].split("&&", 1)[0].split()
            assert [p for p in packages if not p.startswith("-")] == ["fonts-noto-cjk"], run
    copies = _instructions(final, "COPY")
    assert copies == [], "the final stage installs the wheel only (no COPY of sources)"
    assert any("from=builder" in r for r in _instructions(final, "RUN"))


def test_builder_builds_the_wheel_with_the_templates_and_without_the_sandbox() -> None:
    builder = _stages()[0]
    assert any(c.startswith("templates") for c in _instructions(builder, "COPY"))
    assert any(c.startswith("locales") for c in _instructions(builder, "COPY"))
    [run] = [r for r in _instructions(builder, "RUN") if "pip wheel" in r]
    assert run.startswith("pip wheel")  # gpunode_sandbox/ is not in the build context


def test_the_image_carries_a_matplotlib_font_cache_its_user_can_write() -> None:
    final = _stages()[-1]
    assert "MPLCONFIGDIR=/opt/gpunode/matplotlib" in _instructions(final, "ENV")
    [warm] = [r for r in _instructions(final, "RUN") if "import bot.charts" in r]
    assert "-o 10001 -g 10001 /opt/gpunode/matplotlib" in warm
    assert "--reuid=10001" in warm


def test_entrypoint_is_gpunode_and_default_command_is_serve() -> None:
    final = _stages()[-1]
    assert json.loads(_instructions(final, "ENTRYPOINT")[0]) == ["gpunode"]
    assert json.loads(_instructions(final, "CMD")[0]) == ["serve"]


def test_dockerignore_keeps_secrets_and_the_venv_out_of_the_context() -> None:
    lines = (REPO / ".dockerignore").read_text().split()
    assert lines[lines.index("*")] == "*", "deny by default"
    allowed = {line[1:].rstrip("/") for line in lines if line.startswith("!")}
    assert allowed == {"pyproject.toml", "README.md", "bot", "templates", "locales", "deploy/base"}


def test_every_file_the_dockerfile_copies_from_the_context_is_in_the_context() -> None:
    """A COPY of a path .dockerignore leaves out fails the build ("not found"): deploy/base
    was copied by the builder and left out of the context until this test."""
    lines = (REPO / ".dockerignore").read_text().split()
    allowed = [line[1:].rstrip("/") for line in lines if line.startswith("!")]
    sources = [
        word.rstrip("/")
        for stage in _stages()
        for copy in _instructions(stage, "COPY")
        if "--from=" not in copy
        for word in copy.split()[:-1]
        if not word.startswith("--")
    ]
    assert sources, "the Dockerfile copies from its context"
    outside = [s for s in sources if not any(s == a or s.startswith(f"{a}/") for a in allowed)]
    assert outside == [], f"copied but left out of the build context: {outside}"
