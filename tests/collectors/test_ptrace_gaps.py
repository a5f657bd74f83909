"""Without ptrace rights every other process's smaps_rollup is EACCES (real nodes: ~30 of
them). The collector reports that as ONE gap naming the count and a few PIDs, and still gives
each process its RSS from status."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from bot.collectors.gaps import GapLog
from bot.core.model.evidence import EvidenceBundle

REPO = Path(__file__).resolve().parents[2]
HOSTS = REPO / "tests" / "fixtures" / "hosts"
#: root bypasses file modes; drop the capabilities that do (the Job drops ALL)
NO_DAC = ("setpriv", "--bounding-set=-dac_override,-dac_read_search", "--inh-caps=-all", "--")


def test_repeated_per_process_problems_become_one_gap() -> None:
    gaps = GapLog()
    gaps.add("nvml", "no driver")
    for pid in (40, 10, 30, 20, 50, 60, 10):
        gaps.add_each("procfs:/proc/<pid>/smaps_rollup", "permission denied", pid)
    assert gaps.items == [
        {"source": "nvml", "reason": "no driver"},
        {
            "source": "procfs:/proc/<pid>/smaps_rollup",
            "reason": "permission denied for 6 process(es) (e.g. 10, 20, 30, 40, 50)",
        },
    ]
    assert len(gaps) == 2


@pytest.mark.skipif(
    os.geteuid() == 0 and shutil.which("setpriv") is None, reason="root needs setpriv"
)
def test_unreadable_smaps_rollup_files_give_one_summarized_gap(tmp_path: Path) -> None:
    root = tmp_path / "host"
    shutil.copytree(HOSTS / "v2-systemd-containerd", root)
    denied = sorted(root.glob("proc/[0-9]*/smaps_rollup"))
    assert len(denied) >= 3
    for path in denied:
        path.chmod(0)
    prefix = NO_DAC if os.geteuid() == 0 else ()
    run = subprocess.run(
        [*prefix, sys.executable, "-m", "bot", "collect", "--root", str(root), "--format", "json"],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=60,
    )
    assert run.returncode == 0, run.stderr
    bundle = EvidenceBundle.model_validate_json(run.stdout)
    smaps = [g for g in bundle.gaps if "smaps_rollup" in g.source]
    assert len(smaps) == 1
    assert f"for {len(denied)} process(es)" in smaps[0].reason
    assert "CAP_SYS_PTRACE" in smaps[0].reason
    assert all(p.rss_bytes > 0 for p in bundle.processes)
