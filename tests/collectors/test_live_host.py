"""On this machine: free -b agrees, a known allocation is seen, our own cgroup is read."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from bot.collectors.bundle import collect
from bot.core.model.evidence import EvidenceBundle
from gpunode_sandbox.fake_nvml import FakeNvml

REPO = Path(__file__).resolve().parents[2]
NO_GPU = FakeNvml.from_spec({"devices": []})


def _free_columns(out: str) -> dict[str, int]:
    mem = swap = None
    for line in out.splitlines():
        if line.startswith("Mem:"):
            mem = [int(x) for x in line.split()[1:]]
        elif line.startswith("Swap:"):
            swap = [int(x) for x in line.split()[1:]]
    assert mem is not None and swap is not None, out
    keys = ["total", "used", "free", "shared", "buff_cache", "available"]
    return {
        **dict(zip(keys, mem, strict=True)),
        "swap_total": swap[0],
        "swap_used": swap[1],
        "swap_free": swap[2],
    }


@pytest.mark.skipif(
    shutil.which("free") is None or shutil.which("unshare") is None,
    reason="needs procps free and util-linux unshare",
)
def test_collector_meminfo_figures_equal_free_b_on_a_frozen_meminfo(tmp_path: Path) -> None:
    # free and the collector must read the same bytes: freeze /proc/meminfo by bind-mounting a
    # snapshot over it in a private mount namespace, then run both there.
    snap = tmp_path / "meminfo"
    snap.write_bytes(Path("/proc/meminfo").read_bytes())
    script = (
        f"mount --bind {snap} /proc/meminfo && free -b && echo ::: && "
        f"{sys.executable} -m bot collect --top 0 --fake-nvml {tmp_path / 'nvml.json'}"
    )
    (tmp_path / "nvml.json").write_text('{"devices": []}')
    run = subprocess.run(
        ["unshare", "-rm", "sh", "-c", script], capture_output=True, text=True, cwd=REPO, timeout=60
    )
    if run.returncode != 0 and "unshare" in run.stderr:
        pytest.skip(f"no mount namespace here: {run.stderr.strip()}")
    assert run.returncode == 0, run.stderr
    free_out, _, json_out = run.stdout.partition(":::")
    version = subprocess.run(["free", "--version"], capture_output=True, text=True).stdout
    assert "procps" in version
    bundle = EvidenceBundle.model_validate_json(json_out)
    assert bundle.free is not None
    # the bundle's used_bytes is the modern formula; pick the one this free uses
    from bot.core.diagnosis.memory import parse_procps_version, uses_available

    modern = uses_available(parse_procps_version(version))
    f = bundle.free
    ours = {
        "total": f.total_bytes,
        "used": f.used_bytes if modern else f.used_legacy_bytes,
        "free": f.free_bytes,
        "shared": f.shared_bytes,
        "buff_cache": f.buff_cache_bytes,
        "available": f.available_bytes,
        "swap_total": f.swap_total_bytes,
        "swap_used": f.swap_used_bytes,
        "swap_free": f.swap_free_bytes,
    }
    assert ours == _free_columns(free_out)


def test_a_known_allocation_is_reported_with_ps_rss_within_one_percent() -> None:
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys; b = bytearray(192 * 1024 * 1024); b[::4096] = b'x' * len(b[::4096]);"
            " print('ready', flush=True); sys.stdin.read()",
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "ready"
        bundle = collect(Path("/"), top=100000, nvml=NO_GPU)
        ps = (
            int(
                subprocess.run(
                    ["ps", "-o", "rss=", "-p", str(holder.pid)], capture_output=True, text=True
                ).stdout
            )
            * 1024
        )
        mine = next(p for p in bundle.processes if p.pid == holder.pid)
        assert mine.rss_bytes >= 192 * 1024 * 1024
        assert abs(mine.rss_bytes - ps) <= ps * 0.01
        assert mine.command == "python" or mine.command.startswith("python")
        own = Path(f"/proc/{holder.pid}/cgroup").read_text()
        assert mine.cgroup_path is not None and mine.cgroup_path in own
    finally:
        holder.communicate("", timeout=10)


def _own_memory_cgroup() -> str | None:
    for line in Path("/proc/self/cgroup").read_text().splitlines():
        _hid, controllers, path = line.split(":", 2)
        if "memory" in controllers.split(","):
            return path
    return None


@pytest.mark.skipif(
    not (os.path.isdir("/sys/fs/cgroup/memory") and (_own_memory_cgroup() or "/") != "/"),
    reason="this check is for a cgroup-v1 machine whose processes live in a child memory cgroup",
)
def test_this_machines_own_v1_cgroup_is_read() -> None:
    path = _own_memory_cgroup()
    assert path is not None
    base = Path("/sys/fs/cgroup/memory" + path)
    bundle = collect(Path("/"), top=100000, nvml=NO_GPU)
    assert bundle.cgroup_version == 1
    mine = next(c for c in bundle.containers if c.cgroup_path == path)
    assert mine.pod_uid is None and mine.usage_bytes is not None and mine.usage_bytes > 0
    now = int((base / "memory.usage_in_bytes").read_text())
    assert abs(mine.usage_bytes - now) < max(now // 2, 64 << 20)  # it moves; same ballpark
    limit = int((base / "memory.limit_in_bytes").read_text())
    assert mine.limit_bytes == (None if limit >= 1 << 62 else limit)
    stat = dict(line.split() for line in (base / "memory.stat").read_text().splitlines())
    assert mine.anon_bytes is not None and mine.file_bytes is not None
    assert "total_rss" in stat and mine.oom_kill_events is not None
