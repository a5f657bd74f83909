"""The bot behind a real Alertmanager (Debian's ``prometheus-alertmanager``, 0.25), started
here on loopback with a webhook receiver pointing at the bot in HTTP mode against the
stand-ins. Alerts go in through Alertmanager's API v2, exactly as Prometheus sends them.

``make test`` installs the package (``make system-deps``). Without the binary the tests skip
with the reason, except in CI (``CI=true``), where a missing binary fails them.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import UTC, datetime, timedelta
from functools import partial
from pathlib import Path
from typing import Any

import aiohttp
import pytest
import yaml

from gpunode_sandbox.demo import Demo, running_demo
from tests.e2e.conftest import incident_roots, text_of, thread
from tests.ports import free_port

pytestmark = pytest.mark.slow
TOKEN = "am-bearer-token-for-tests"
NODE = "gpu-node-01"
BINARIES = ("prometheus-alertmanager", "alertmanager")  # Debian's name, upstream's name


def alertmanager_binary() -> str:
    for name in BINARIES:
        found = shutil.which(name)
        if found:
            return found
    why = "Alertmanager is not installed: run `make system-deps` (Debian prometheus-alertmanager)"
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(why + "; CI must run these tests")
    pytest.skip(why)


def _read(path: Path) -> str:
    return path.read_text(encoding="utf-8", errors="replace")


#: tries at starting Alertmanager on a port found free (see running_alertmanager)
BIND_ATTEMPTS = 3


def config(bot_url: str, *, token: str | None) -> dict[str, Any]:
    webhook: dict[str, Any] = {"url": f"{bot_url}/alertmanager", "send_resolved": True}
    if token is not None:
        webhook["http_config"] = {"authorization": {"type": "Bearer", "credentials": token}}
    return {
        "route": {
            "receiver": "gpunode",
            "group_by": ["alertname", "node"],
            "group_wait": "1s",
            "group_interval": "1s",
            "repeat_interval": "1h",
        },
        "receivers": [{"name": "gpunode", "webhook_configs": [webhook]}],
    }


class Alertmanager:
    def __init__(self, url: str, log: Path) -> None:
        self.url = url
        self.log = log

    async def logged(self, words: str) -> bool:
        return words in await asyncio.to_thread(_read, self.log)

    async def push(self, *, ends_at: datetime | None = None) -> None:
        """One alert through the API v2, as Prometheus pushes it."""
        now = datetime.now(UTC)
        alert: dict[str, Any] = {
            "labels": {"alertname": "GpunodeMemoryAvailableLow", "node": NODE, "severity": "page"},
            "annotations": {"summary": "memory available below 5%"},
            "startsAt": (now - timedelta(minutes=5)).isoformat(),
            "generatorURL": "http://prometheus.invalid/graph",
        }
        if ends_at is not None:
            alert["endsAt"] = ends_at.isoformat()
        async with (
            aiohttp.ClientSession() as http,
            http.post(f"{self.url}/api/v2/alerts", json=[alert]) as r,
        ):
            assert r.status == 200, await r.text()

    async def webhook_counts(self) -> tuple[float, float]:
        """(notifications sent, notifications failed) to the webhook, from its metrics."""
        async with aiohttp.ClientSession() as http, http.get(f"{self.url}/metrics") as r:
            text = await r.text()
        totals = {"total": 0.0, "failed": 0.0}
        for line in text.splitlines():
            for kind in totals:
                if line.startswith(f'alertmanager_notifications_{kind}{{integration="webhook"'):
                    totals[kind] += float(line.rsplit(" ", 1)[1])
        return totals["total"], totals["failed"]


@contextlib.asynccontextmanager
async def running_alertmanager(
    bot_url: str, tmp_path: Path, *, token: str | None
) -> AsyncIterator[Alertmanager]:
    binary = alertmanager_binary()
    cfg = tmp_path / "alertmanager.yml"
    cfg.write_text(yaml.safe_dump(config(bot_url, token=token)), encoding="utf-8")
    log = tmp_path / "alertmanager.log"
    for attempt in range(BIND_ATTEMPTS):
        # a port found free can be taken before Alertmanager binds it: it then exits saying
        # so, and another port is tried
        port = free_port()
        with log.open("wb") as sink:
            proc = await asyncio.create_subprocess_exec(
                binary,
                f"--config.file={cfg}",
                f"--storage.path={tmp_path / 'am-data'}",
                f"--web.listen-address=127.0.0.1:{port}",
                "--cluster.listen-address=",  # no gossip: one instance, loopback only
                stdout=asyncio.subprocess.DEVNULL,
                stderr=sink,
            )
        am = Alertmanager(f"http://127.0.0.1:{port}", log)
        try:
            await until(partial(_ready, am.url), what="Alertmanager ready", proc=proc, log=log)
            break
        except AssertionError:
            taken = "address already in use" in await asyncio.to_thread(_read, log)
            if proc.returncode is None or not taken or attempt == BIND_ATTEMPTS - 1:
                await _stop(proc)
                raise
    try:
        yield am
    finally:
        await _stop(proc)


async def _stop(proc: asyncio.subprocess.Process) -> None:
    if proc.returncode is None:
        proc.terminate()
        try:
            await asyncio.wait_for(proc.wait(), 10)
        except TimeoutError:
            proc.kill()
            await proc.wait()


async def _ready(url: str) -> bool:
    """Whether Alertmanager answers ready; not when nothing answers within a few seconds
    (then whether it exited is looked at, as when it refuses)."""
    try:
        async with (
            aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=3)) as http,
            http.get(f"{url}/-/ready") as r,
        ):
            return r.status == 200
    except (aiohttp.ClientError, TimeoutError):
        return False


async def until(
    check: Callable[[], Awaitable[bool]],
    *,
    what: str,
    timeout_s: float = 30,
    proc: asyncio.subprocess.Process | None = None,
    log: Path | None = None,
) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout_s
    while not await check():
        if proc is not None and proc.returncode is not None:
            err = await asyncio.to_thread(_read, log) if log else ""
            raise AssertionError(f"Alertmanager exited: {err[-2000:]}")
        if loop.time() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.2)


@pytest.fixture
async def guarded() -> AsyncIterator[Demo]:
    async with running_demo("seed", alert_token=TOKEN) as d:
        yield d


async def test_an_alert_through_alertmanager_with_the_token_opens_one_incident_thread(
    guarded: Demo, tmp_path: Path
) -> None:
    async with running_alertmanager(guarded.bot_url, tmp_path, token=TOKEN) as am:
        await am.push()

        async def diagnosed() -> bool:
            await guarded.drain()
            roots = incident_roots(guarded.slack)
            return bool(roots) and any(
                "Memory evidence" in text_of(m) for m in thread(guarded, str(roots[0]["ts"]))
            )

        await until(diagnosed, what="the alert's incident thread with evidence")
        await am.push(ends_at=datetime.now(UTC) - timedelta(seconds=1))  # resolved

        async def resolved() -> bool:
            await guarded.drain()
            root = str(incident_roots(guarded.slack)[0]["ts"])
            return any("has resolved" in text_of(m) for m in thread(guarded, root))

        await until(resolved, what="the resolved note in the thread")
        sent, failed = await am.webhook_counts()

    [incident] = await guarded.runtime.store.open_incidents()
    assert (incident.node, incident.opened_by) == (NODE, "alertmanager")
    assert len(incident_roots(guarded.slack)) == 1
    assert sent >= 2 and failed == 0


async def test_alertmanager_without_the_token_is_refused_and_nothing_happens(
    guarded: Demo, tmp_path: Path
) -> None:
    async with running_alertmanager(guarded.bot_url, tmp_path, token=None) as am:
        await am.push()

        await until(
            lambda: am.logged("unexpected status code 401"),
            what="Alertmanager's notification refused with 401",
        )
        await guarded.drain()

    assert incident_roots(guarded.slack) == []
    assert await guarded.runtime.store.open_incidents() == []
    assert not [r for r in guarded.kube.requests if r[0] == "POST"]  # no diagnostic Job


async def test_alertmanager_to_a_bot_without_a_token_setting_gets_the_intake_disabled(
    tmp_path: Path,
) -> None:
    async with (
        running_demo("seed") as demo,
        running_alertmanager(demo.bot_url, tmp_path, token=TOKEN) as am,
    ):
        await am.push()

        await until(
            lambda: am.logged("unexpected status code 404"),
            what="Alertmanager's notification refused with 404 (intake disabled)",
        )
        await demo.drain()
        assert incident_roots(demo.slack) == []
        assert await demo.runtime.store.open_incidents() == []
