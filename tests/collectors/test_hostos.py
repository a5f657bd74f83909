"""The collectors' few ``os`` functions (``hostos``, without ``import os``) answer as ``os``'s."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from bot.collectors import hostos

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    "name", ["1234", "caf\u00e9", "x\udcff"], ids=["ascii", "utf8", "surrogate"]
)
def test_names_are_encoded_and_decoded_as_os_does(name: str) -> None:
    assert hostos.fsencode(name) == os.fsencode(name)
    assert hostos.fsdecode(os.fsencode(name)) == os.fsdecode(os.fsencode(name)) == name
    assert hostos.fsdecode(b"\xff12") == os.fsdecode(b"\xff12")


def test_exists_and_isdir_answer_as_os_path_does(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("x")
    (tmp_path / "dir").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "dir")
    (tmp_path / "dangling").symlink_to(tmp_path / "gone")
    names = ["file", "dir", "link", "dangling", "gone", "file/below", "nul\0byte"]
    for path in [str(tmp_path / n) for n in names]:
        assert (hostos.exists(path), hostos.isdir(path)) == (
            os.path.exists(path),
            os.path.isdir(path),
        ), path


def test_getenv_reads_os_environ_once_os_is_imported(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GPUNODE_HOSTOS_PROBE", "set-after-start")
    assert hostos.getenv("GPUNODE_HOSTOS_PROBE") == "set-after-start"
    monkeypatch.delenv("GPUNODE_HOSTOS_PROBE")
    assert hostos.getenv("GPUNODE_HOSTOS_PROBE") is None


def test_getenv_reads_the_starting_environment_where_os_is_not_imported() -> None:
    code = (
        "import sys\n"
        "from bot.collectors import hostos\n"
        "print(hostos.getenv('NODE_NAME'), hostos.getenv('GPUNODE_UNSET'), 'os' in sys.modules)\n"
    )
    run = subprocess.run(
        [
            sys.executable,
            "-I",
            "-S",
            "-c",
            f"import sys; sys.path.insert(0, {str(REPO)!r})\n{code}",
        ],
        capture_output=True,
        text=True,
        env={"NODE_NAME": "gpu-\u00e9-1"},
        timeout=60,
    )
    assert run.returncode == 0, run.stderr
    assert run.stdout == "gpu-\u00e9-1 None False\n"
