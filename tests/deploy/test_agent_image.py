"""The DaemonSet's agent runs from the slim collector image: the image's file set (rebuilt
from the Dockerfile's COPY lines, as tests/deploy/test_collector_image.py does), started the
way deploy/overlays/daemonset starts it (``python -m bot agent``, here ``-S``: no site-packages,
so no kubernetes client, no aiohttp, no pydantic), serves a bundle over HTTPS to the bot's
token, reviewed by the stand-in's TokenReview."""

from __future__ import annotations

import asyncio
import http.client
import json
import os
import re
import shutil
import socket
import ssl
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

from gpunode_sandbox.kubesim import KubeSim
from gpunode_sandbox.kubesim.access import API_AUDIENCES
from tests.deploy.test_collector_image import HOST, copied_files
from tests.kube.agents import AUDIENCE, BOT_USER, OVERLAY, SERVER_NAME, make_tls

REPO = Path(__file__).resolve().parents[2]


async def _port_logged(proc: asyncio.subprocess.Process, said: list[bytes]) -> int:
    """The port the agent started on ``--port 0`` bound, from its log line (each line read
    is kept in ``said``)."""
    assert proc.stdout is not None
    while True:
        line = await asyncio.wait_for(proc.stdout.readline(), timeout=60)
        said.append(line)
        if not line:
            raise AssertionError(b"the agent exited before listening: " + b"".join(said))
        found = re.search(rb"gpunode agent on 127\.0\.0\.1:(\d+),", line)
        if found:
            return int(found.group(1))


def _get(port: int, ca: Path, token: str) -> tuple[int, bytes]:
    context = ssl.create_default_context(cafile=str(ca))
    deadline = time.monotonic() + 60  # the subprocess needs a moment to listen
    while True:
        try:
            raw = socket.create_connection(("127.0.0.1", port), timeout=30)
            break
        except ConnectionRefusedError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)
    conn = http.client.HTTPSConnection("127.0.0.1", port, timeout=60, context=context)
    conn.sock = context.wrap_socket(raw, server_hostname=SERVER_NAME)
    try:
        conn.request("GET", "/v1/evidence", headers={"Authorization": f"Bearer {token}"})
        resp = conn.getresponse()
        return resp.status, resp.read()
    finally:
        conn.close()


async def test_the_agent_serves_from_the_slim_image_without_any_third_party_package(
    make_kubesim: Callable[..., Awaitable[KubeSim]], tmp_path: Path
) -> None:
    sim = await make_kubesim("seed", access_dir=OVERLAY)
    slim = tmp_path / "slim"
    for rel in copied_files():
        (slim / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(REPO / rel, slim / rel)
    tls = make_tls(tmp_path / "tls")
    own = tmp_path / "agent-token"
    own.write_text(sim.authn.issue("gpunode", "gpunode-agent", API_AUDIENCES))
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-S",
        "-m",
        "bot",
        "agent",
        "--root",
        str(HOST),
        "--listen",
        "127.0.0.1",
        "--port",
        "0",
        "--tls-cert",
        str(tls.cert),
        "--tls-key",
        str(tls.key),
        "--allow",
        BOT_USER,
        "--api-server",
        sim.url,
        "--api-token-file",
        str(own),
        "--node-name",
        "slim",
        cwd=slim,
        env={"PYTHONPATH": str(slim), "PATH": os.environ.get("PATH", "")},
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    said: list[bytes] = []
    try:
        port = await _port_logged(proc, said)
        token = sim.authn.issue("gpunode", "gpunode", (AUDIENCE,))
        status, body = await asyncio.to_thread(_get, port, tls.ca, token)
    finally:
        proc.terminate()
        rest, _ = await asyncio.wait_for(proc.communicate(), timeout=60)
    out = b"".join(said) + rest

    assert status == 200, (body, out)
    doc = json.loads(body)
    assert doc["node_name"] == "slim" and doc["processes"]
    assert token.encode() not in out  # its log holds no token
