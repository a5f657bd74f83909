"""``gpunode diagnose`` tells a person at a terminal what the diagnostic Job is doing (on
stderr, redrawn in place); a script (stderr not a TTY) or ``--quiet`` gets nothing there.
The terminal is a real pseudo-terminal, the cluster the stand-in."""

from __future__ import annotations

import os
import pty
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from bot.cli.progress import Progress
from gpunode_sandbox.kubesim import KubeSim, load_scenario
from gpunode_sandbox.kubesim.access import BOT_TOKEN

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def sim_url() -> Iterator[str]:
    with KubeSim.running_in_thread(load_scenario("seed")) as sim:
        yield sim.url


def _env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GPUNODE_")}
    env.update(PYTHONPATH=str(ROOT), HOME=str(home))
    return env


def diagnose_on_a_terminal(url: str, home: Path, *extra: str) -> tuple[int, str, str]:
    """(exit status, what the terminal showed on stderr, stdout)."""
    primary, secondary = pty.openpty()
    args = [sys.executable, "-m", "bot", "diagnose", "gpu-node-01", "--server", url]
    proc = subprocess.Popen(
        [*args, "--token", BOT_TOKEN, *extra],
        stdout=subprocess.PIPE,
        stderr=secondary,
        cwd=home,
        env=_env(home),
        text=True,
    )
    os.close(secondary)
    shown = b""
    while True:
        try:
            chunk = os.read(primary, 4096)
        except OSError:  # EIO: the child closed the terminal
            break
        if not chunk:
            break
        shown += chunk
    os.close(primary)
    out = proc.stdout.read() if proc.stdout is not None else ""
    proc.wait(timeout=120)
    if proc.stdout is not None:
        proc.stdout.close()
    return proc.returncode, shown.decode("utf-8", "replace"), out


def test_progress_is_shown_on_a_terminal_and_cleared_before_the_report(
    sim_url: str, tmp_path: Path
) -> None:
    code, shown, out = diagnose_on_a_terminal(sim_url, tmp_path)
    assert code == 0
    assert "creating the diagnostic Job… 0 s" in shown
    assert "reading the evidence… " in shown
    assert shown.endswith("\r\x1b[K")  # the line is erased: the terminal is left clean
    assert "gpu-node-01" in out and "creating the diagnostic Job" not in out


def test_quiet_silences_the_progress(sim_url: str, tmp_path: Path) -> None:
    code, shown, out = diagnose_on_a_terminal(sim_url, tmp_path, "--quiet")
    assert code == 0 and shown == "" and "gpu-node-01" in out


def test_no_progress_when_stderr_is_not_a_terminal(sim_url: str, tmp_path: Path) -> None:
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "bot",
            "diagnose",
            "gpu-node-01",
            "--server",
            sim_url,
            "--token",
            BOT_TOKEN,
        ],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=_env(tmp_path),
        timeout=120,
        check=False,
    )
    assert result.returncode == 0 and result.stderr == ""


class _Terminal:
    def __init__(self) -> None:
        self.text = ""

    def write(self, s: str) -> int:
        self.text += s
        return len(s)

    def flush(self) -> None:
        pass

    def isatty(self) -> bool:
        return True


def test_the_seconds_count_per_phase_and_zh_cn_is_worded() -> None:
    now = [100.0]
    term = _Terminal()
    p = Progress(term, enabled=True, locale="zh-CN", clock=lambda: now[0])  # type: ignore[arg-type]
    p.phase("scheduling")
    now[0] += 7
    p.phase("scheduling")  # the same phase: its clock keeps running
    now[0] += 5
    p.phase("pulling")  # a new phase starts at 0
    now[0] += 12
    p.phase("pulling")
    assert "等待 Job 的 Pod 被调度… 7 秒" in term.text
    assert term.text.endswith("等待镜像拉取… 12 秒")
    en = _Terminal()
    q = Progress(en, enabled=True, clock=lambda: now[0], locale="en")  # type: ignore[arg-type]
    q.phase("pulling")
    now[0] += 12
    q.phase("pulling")
    assert en.text.endswith("waiting for the image… 12 s")
