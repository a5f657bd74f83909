"""The real ``gpunode serve`` and its listeners' ports, against both stand-ins: port 0 picks a
free port and the log says which (what the tests that start serve use: a port picked free
beforehand can be taken by another process before serve binds it, the flake under load); a
port another process holds stops serve with the address, the system's reason and the setting
to change, in the operator's language, never a traceback, and nothing left running."""

from __future__ import annotations

import asyncio
import os
import re
import signal
import socket
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import pytest

from gpunode_sandbox.demo import POLICY
from gpunode_sandbox.kubesim import KubeSim, load_scenario
from gpunode_sandbox.kubesim.access import BOT_TOKEN
from gpunode_sandbox.slacksim import SlackSim

pytestmark = pytest.mark.slow
CHECKOUT = str(Path(__file__).resolve().parents[2])  # the code under test, not an install
SECRET = "ports-signing-secret"
START_S = 120  # a serve start is seconds of CPU; with both cores busy, far more


@pytest.fixture
async def standins() -> AsyncIterator[tuple[KubeSim, SlackSim]]:
    kube = KubeSim(load_scenario("seed"))
    slack = SlackSim(signing_secret=SECRET, bot_token="xoxb-serve")
    await kube.start()
    await slack.start()
    try:
        yield kube, slack
    finally:
        await slack.stop()
        await kube.stop()


def serve_env(kube: KubeSim, slack: SlackSim, tmp_path: Path, **ports: str) -> dict[str, str]:
    return {
        "PATH": os.environ.get("PATH", ""),
        "PYTHONPATH": CHECKOUT,
        "HOME": os.environ.get("HOME", str(tmp_path)),  # matplotlib's font cache built once
        "GPUNODE_SLACK__BOT_TOKEN": "xoxb-serve",
        "GPUNODE_SLACK__SIGNING_SECRET": SECRET,
        "GPUNODE_SLACK__API_BASE_URL": slack.api_url,
        "GPUNODE_KUBE__MODE": "server",
        "GPUNODE_KUBE__SERVER": kube.url,
        "GPUNODE_KUBE__TOKEN": BOT_TOKEN,
        "GPUNODE_KUBE__VERIFY_TLS": "false",
        "GPUNODE_ACTIONS__POLICY_FILE": str(POLICY),
        "GPUNODE_STORE__PATH": str(tmp_path / "gpunode.db"),
        "GPUNODE_HTTP__HOST": "127.0.0.1",
        "GPUNODE_METRICS__HOST": "127.0.0.1",
        **ports,
    }


async def status_of(url: str) -> int:
    async with aiohttp.ClientSession() as http, http.get(url) as resp:
        return resp.status


async def test_port_zero_listens_on_a_free_port_the_log_names_for_http_and_metrics(
    standins: tuple[KubeSim, SlackSim], tmp_path: Path
) -> None:
    kube, slack = standins
    env = serve_env(kube, slack, tmp_path, GPUNODE_HTTP__PORT="0", GPUNODE_METRICS__PORT="0")
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "bot", "serve", env=env, cwd=tmp_path,
        stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    assert proc.stderr is not None
    said: list[str] = []
    try:
        async with asyncio.timeout(START_S):
            while not any("metrics on " in line for line in said):
                raw = await proc.stderr.readline()
                assert raw, f"serve ended before listening:\n{''.join(said)}"
                said.append(raw.decode())
        text = "".join(said)
        http = re.search(r"listening on 127\.0\.0\.1:(\d+) \(http mode\)", text)
        metrics = re.search(r"metrics on 127\.0\.0\.1:(\d+)/metrics", text)
        assert http and metrics, text
        http_port, metrics_port = int(http[1]), int(metrics[1])
        assert 0 not in (http_port, metrics_port) and http_port != metrics_port
        assert await status_of(f"http://127.0.0.1:{http_port}/readyz") == 200
        assert await status_of(f"http://127.0.0.1:{metrics_port}/metrics") == 200
    finally:
        proc.send_signal(signal.SIGTERM)
        code = await asyncio.wait_for(proc.wait(), 60)
    assert code == 0


@pytest.mark.parametrize("lang", ["zh-CN", "en"])
async def test_a_port_another_process_holds_stops_serve_saying_what_to_change(
    standins: tuple[KubeSim, SlackSim], tmp_path: Path, lang: str
) -> None:
    from tests.render.test_catalogs import english_words

    kube, slack = standins
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        port = held.getsockname()[1]
        env = serve_env(kube, slack, tmp_path, GPUNODE_HTTP__PORT=str(port))
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "bot", "serve", "--lang", lang, env=env, cwd=tmp_path,
            stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE,
        )  # fmt: skip
        _, raw = await asyncio.wait_for(proc.communicate(), START_S)

    err = raw.decode()
    last = err.strip().splitlines()[-1]
    assert proc.returncode == 1 and last.startswith("gpunode: "), err
    assert "Traceback" not in err
    assert f"127.0.0.1:{port}" in last and "EADDRINUSE" in last, last
    assert "GPUNODE_HTTP__PORT" in last, last
    if lang == "en":
        assert last == (
            f"gpunode: cannot listen on 127.0.0.1:{port} (EADDRINUSE): stop what holds that "
            "port, or set GPUNODE_HTTP__PORT to a free one (0: any free port)"
        )
    else:
        assert english_words(last) == [] and re.search("[\u4e00-\u9fff]", last), last
    assert SECRET not in err
