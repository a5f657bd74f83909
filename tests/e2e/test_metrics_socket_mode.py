"""``gpunode serve`` in Socket Mode, as deployed (deploy/base sets GPUNODE_METRICS__PORT):
``/metrics`` answers on its own port, not on the HTTP port, and counts what Slack sent over
the socket. The bot is a real subprocess between the two stand-ins."""

from __future__ import annotations

import asyncio
import os
import re
import sys
from pathlib import Path

import aiohttp
import pytest

from gpunode_sandbox.demo import APP_TOKEN, BOT_TOKEN, POLICY, running_standins
from gpunode_sandbox.kubesim.access import BOT_TOKEN as KUBE_BOT_TOKEN
from gpunode_sandbox.slacksim import SlackSim
from gpunode_sandbox.story import CHANNEL
from tests.telemetry.scraping import Scrape, scrape

CHECKOUT = str(Path(__file__).resolve().parents[2])  # the code under test, not an install

pytestmark = pytest.mark.slow


async def _until(condition: object, *, timeout_s: float) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout_s
    while loop.time() < deadline:
        if await condition():  # type: ignore[operator]
            return
        await asyncio.sleep(0.2)
    raise AssertionError("timed out")


async def _status(url: str) -> int:
    try:
        async with aiohttp.ClientSession() as http, http.get(url) as resp:
            return resp.status
    except aiohttp.ClientError:
        return 0


async def test_serve_in_socket_mode_exports_metrics_on_the_metrics_port(tmp_path: Path) -> None:
    async with running_standins(socket_mode=True) as (kube, slack):
        env = {
            "PATH": os.environ.get("PATH", ""),
            "PYTHONPATH": CHECKOUT,
            "HOME": str(tmp_path),
            "GPUNODE_SLACK__BOT_TOKEN": BOT_TOKEN,
            "GPUNODE_SLACK__APP_TOKEN": APP_TOKEN,
            "GPUNODE_SLACK__SOCKET_MODE": "true",
            "GPUNODE_SLACK__API_BASE_URL": slack.api_url,
            "GPUNODE_KUBE__MODE": "server",
            "GPUNODE_KUBE__SERVER": kube.url,
            "GPUNODE_KUBE__TOKEN": KUBE_BOT_TOKEN,
            "GPUNODE_KUBE__VERIFY_TLS": "false",
            "GPUNODE_STORE__PATH": str(tmp_path / "gpunode.db"),
            "GPUNODE_ACTIONS__POLICY_FILE": str(POLICY),
            "GPUNODE_HTTP__HOST": "127.0.0.1",
            "GPUNODE_HTTP__PORT": "0",  # a free port, which serve logs (one picked free
            # beforehand could be taken before serve binds it: the flake under load)
            "GPUNODE_METRICS__HOST": "127.0.0.1",
            "GPUNODE_METRICS__PORT": "0",
        }
        proc = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "bot",
            "serve",
            env=env,
            cwd=tmp_path,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
        )
        assert proc.stdout is not None
        said: list[bytes] = []
        try:
            async with asyncio.timeout(120):  # a serve start: seconds of CPU, more when busy
                while not any(b"metrics on " in line for line in said):
                    said.append(await proc.stdout.readline())
                    assert said[-1], b"".join(said).decode()[-3000:]
            text = b"".join(said).decode()
            http = re.search(r"listening on 127\.0\.0\.1:(\d+) ", text)
            metrics = re.search(r"metrics on 127\.0\.0\.1:(\d+)/metrics", text)
            assert http and metrics, text
            http_port, metrics_url = int(http[1]), f"http://127.0.0.1:{metrics[1]}"
            await _until(lambda: _ok(f"{metrics_url}/metrics"), timeout_s=60)
            await _until(lambda: _connected(slack), timeout_s=60)

            result = await slack.slash_command("U0ALICE", CHANNEL, "diagnose gpu-node-01")
            assert result.status == 200

            async def diagnosed() -> bool:
                s = await scrape(metrics_url)
                return s.value("gpunode_commands_total", command="diagnose") == 1

            await _until(diagnosed, timeout_s=120)
            s: Scrape = await scrape(metrics_url)
            assert s.value("gpunode_commands_total", command="diagnose", outcome="ok") == 1
            assert s.value("gpunode_diagnosis_duration_seconds_count", outcome="ok") == 1
            assert s.value("gpunode_slack_api_requests_total", method="apps.connections.open") >= 1
            assert s.value("gpunode_leader") == 1
            # the HTTP port serves the probes, not the metrics
            assert await _status(f"http://127.0.0.1:{http_port}/healthz") == 200
            assert await _status(f"http://127.0.0.1:{http_port}/metrics") == 404
        finally:
            proc.terminate()
            rest, _ = await asyncio.wait_for(proc.communicate(), timeout=60)
        out = b"".join(said) + rest
        assert b"Traceback" not in out, out.decode()[-3000:]


async def _ok(url: str) -> bool:
    return await _status(url) == 200


async def _connected(slack: SlackSim) -> bool:
    return bool(slack.socket.connections)
