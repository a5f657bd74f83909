"""Benchmark ``gpunode collect`` against ``ps aux --sort=-%mem`` on a busy process table.

Starts 2,000 idle ``sleep`` processes (one process group, always killed at the end), then
runs the collector (``--format json``, default top 20, real NVML lookup) and ``ps`` in
alternation for several rounds. Prints medians and, as the last line, one JSON object:
{"bench": "collect", "metric": "wall_s_median", "value", "baseline", "ratio", "target": 1.0,
 "peak_rss_mib"}. Peak RSS is the collector child's ``ru_maxrss`` from ``wait4`` (target <= 40).

Usage: python bench/collect.py [--procs 2000] [--rounds 7]
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def collector_command() -> list[str]:
    script = REPO / ".venv" / "bin" / "gpunode"
    if script.exists():
        return [str(script), "collect", "--format", "json"]
    return [sys.executable, "-m", "bot", "collect", "--format", "json"]


def timed(cmd: list[str]) -> tuple[float, int]:
    """Wall seconds and peak RSS (KiB) of one run, output discarded."""
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, cwd=REPO)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        err = proc.stderr.read().decode() if proc.stderr else ""
        raise SystemExit(f"{cmd[0]} failed ({proc.returncode}): {err}")
    if proc.stderr:
        proc.stderr.close()
    return wall, usage.ru_maxrss


def _pids() -> int:
    return sum(1 for p in os.listdir("/proc") if p.isdigit())


def start_sleepers(count: int) -> subprocess.Popen[bytes]:
    """``count`` idle sleeps in their own process group (the shell that started them leads it)."""
    before = _pids()
    spawner = subprocess.Popen(
        ["sh", "-c", f"i=0; while [ $i -lt {count} ]; do sleep 600 & i=$((i+1)); done; wait"],
        start_new_session=True,
    )
    deadline = time.monotonic() + 120
    while _pids() < before + count and time.monotonic() < deadline:
        time.sleep(0.2)
    time.sleep(1.0)  # let the spawner settle so it does not compete with the measurements
    return spawner


def stop_sleepers(spawner: subprocess.Popen[bytes]) -> None:
    """Kill the whole group and wait until none of it is left."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(spawner.pid, sig)
        except ProcessLookupError:
            break
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            try:
                os.killpg(spawner.pid, 0)
            except ProcessLookupError:
                break
            spawner.poll()
            time.sleep(0.1)
    spawner.wait(timeout=30)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--procs", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=9)
    args = parser.parse_args()
    collector = collector_command()
    baseline = ["ps", "aux", "--sort=-%mem"]
    spawner = start_sleepers(args.procs)
    try:
        pids = _pids()
        print(f"process table: {pids} pids; collector: {' '.join(collector)}")
        timed(collector), timed(baseline)  # warm the page cache and .pyc files
        ours, theirs, peaks = [], [], []
        for _ in range(args.rounds):
            wall, peak = timed(collector)
            ours.append(wall)
            peaks.append(peak)
            theirs.append(timed(baseline)[0])
    finally:
        stop_sleepers(spawner)
    value, base = statistics.median(ours), statistics.median(theirs)
    peak_mib = max(peaks) / 1024
    print(f"gpunode collect: median {value:.3f}s  (runs: {', '.join(f'{x:.3f}' for x in ours)})")
    print(
        f"ps aux --sort=-%mem: median {base:.3f}s  (runs: {', '.join(f'{x:.3f}' for x in theirs)})"
    )
    print(f"collector peak RSS: {peak_mib:.1f} MiB (target <= 40)")
    print(
        json.dumps(
            {
                "bench": "collect",
                "metric": "wall_s_median",
                "value": round(value, 4),
                "baseline": round(base, 4),
                "ratio": round(value / base, 3),
                "target": 1.0,
                "peak_rss_mib": round(peak_mib, 1),
            }
        )
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
