"""A real Prometheus (Debian's ``prometheus``) on a free loopback port, one per test module.

Its TSDB is built from ``histories.openmetrics(now)`` with ``promtool tsdb create-blocks-from
openmetrics``; timestamps are relative to the module's ``now`` so the planted shapes sit inside
every query window. Skipped (with the reason) when the binaries are missing: ``make test``
installs them (``make system-deps``).
"""

from __future__ import annotations

import shutil
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.ports import free_port
from tests.prom.histories import RunningPrometheus, openmetrics


@pytest.fixture(scope="module")
def prometheus(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningPrometheus]:
    binary, promtool = shutil.which("prometheus"), shutil.which("promtool")
    if binary is None or promtool is None:
        pytest.skip("prometheus/promtool not installed: run `make system-deps`")
    root: Path = tmp_path_factory.mktemp("prometheus")
    now_s = float(int(time.time()))
    source = root / "history.om"
    source.write_text(openmetrics(now_s), encoding="utf-8")
    data = root / "data"
    subprocess.run(
        [promtool, "tsdb", "create-blocks-from", "openmetrics", "-q", str(source), str(data)],
        check=True,
        capture_output=True,
        timeout=120,
    )
    config = root / "prometheus.yml"
    config.write_text("global:\n  scrape_interval: 15s\nscrape_configs: []\n", encoding="utf-8")
    for attempt in range(3):
        # a port found free can be taken (another process's client port) before Prometheus
        # binds it: it then exits saying so, and another port is tried
        port = free_port()
        log = (root / "prometheus.log").open("w")
        proc = subprocess.Popen(
            [
                binary,
                f"--config.file={config}",
                f"--storage.tsdb.path={data}",
                "--storage.tsdb.retention.time=30d",
                f"--web.listen-address=127.0.0.1:{port}",
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        url = f"http://127.0.0.1:{port}"
        if _ready(url, proc):
            break
        log.close()
        said = (root / "prometheus.log").read_text()
        if "address already in use" not in said or attempt == 2:
            raise RuntimeError(said[-2000:])
    try:
        yield RunningPrometheus(url=url, now_s=now_s)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()


def _ready(url: str, proc: subprocess.Popen[bytes]) -> bool:
    """Wait (60 s at most) for Prometheus at ``url`` to be ready: False if it exited first."""
    deadline = time.monotonic() + 60
    while True:
        try:
            with urllib.request.urlopen(f"{url}/-/ready", timeout=1) as resp:
                if resp.status == 200:
                    return True
        except OSError:
            pass
        if proc.poll() is not None:
            return False
        if time.monotonic() > deadline:
            proc.kill()
            proc.wait()
            return False
        time.sleep(0.2)
