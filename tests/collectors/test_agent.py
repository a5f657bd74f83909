"""``gpunode agent`` answers the bot, and only the bot: a real HTTPS server over the stand-in's
fake node files, reviewing each token with the stand-in's TokenReview (the agent's own
ServiceAccount of deploy/overlays/daemonset, which may create TokenReviews and nothing
else)."""

from __future__ import annotations

import asyncio
import http.client
import json
import logging
import socket
import ssl
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from gpunode_sandbox.kubesim import KubeSim
from gpunode_sandbox.kubesim.access import BOT_TOKEN
from tests.kube.agents import (
    AUDIENCE,
    OVERLAY,
    SERVER_NAME,
    RunningAgent,
    Tls,
    make_tls,
    start_agent,
)

NODE = "gpu-node-01"
Make = Callable[..., Awaitable[KubeSim]]


def ask(
    agent: RunningAgent,
    tls: Tls,
    *,
    token: str | None,
    method: str = "GET",
    path: str = "/v1/evidence",
    body: bytes | None = None,
) -> tuple[int, dict[str, str], bytes]:
    context = ssl.create_default_context(cafile=str(tls.ca))
    conn = http.client.HTTPSConnection(agent.address, agent.port, timeout=60, context=context)
    conn.sock = context.wrap_socket(
        socket.create_connection((agent.address, agent.port), timeout=60),
        server_hostname=SERVER_NAME,
    )
    headers = {"Authorization": f"Bearer {token}"} if token is not None else {}
    try:
        conn.request(method, path, body=body, headers=headers)
        resp = conn.getresponse()
        return resp.status, dict(resp.getheaders()), resp.read()
    finally:
        conn.close()


@pytest.fixture
async def cluster(make_kubesim: Make) -> KubeSim:
    return await make_kubesim("seed", access_dir=OVERLAY)


@pytest.fixture
def tls(tmp_path: Path) -> Tls:
    return make_tls(tmp_path / "tls")


@pytest.fixture
async def make_agent(
    cluster: KubeSim, tls: Tls, tmp_path: Path
) -> AsyncIterator[Callable[..., RunningAgent]]:
    running: list[RunningAgent] = []

    def make(**kw: Any) -> RunningAgent:
        agent = start_agent(cluster, NODE, tls, tmp_path / f"agent{len(running)}", **kw)
        running.append(agent)
        return agent

    yield make
    for agent in running:
        await asyncio.to_thread(agent.stop)


def bot_token(sim: KubeSim) -> str:
    """The bot's projected token for the agents' audience (deploy/overlays/daemonset)."""
    return sim.authn.issue("gpunode", "gpunode", (AUDIENCE,))


async def test_the_bots_token_gets_the_nodes_evidence(
    cluster: KubeSim, tls: Tls, make_agent: Callable[..., RunningAgent]
) -> None:
    agent = make_agent()

    status, _, body = await asyncio.to_thread(ask, agent, tls, token=bot_token(cluster))

    assert status == 200, body
    doc = json.loads(body)
    assert doc["node_name"] == NODE
    assert doc["hostname"] == NODE
    assert doc["meminfo"]["mem_total_bytes"] > 0
    assert doc["processes"] and doc["containers"]
    assert doc["gpus"], "the fake NVML of the GPU node is read"
    reviews = [r for r in cluster.requests if r[1].endswith("/tokenreviews")]
    assert len(reviews) == 1


async def test_a_request_without_a_token_is_refused_with_401(
    tls: Tls, make_agent: Callable[..., RunningAgent]
) -> None:
    agent = make_agent()

    status, headers, body = await asyncio.to_thread(ask, agent, tls, token=None)

    assert status == 401
    assert headers["WWW-Authenticate"].startswith("Bearer")
    assert b"bearer token is required" in body


async def test_another_service_accounts_token_is_refused_with_403(
    cluster: KubeSim, tls: Tls, make_agent: Callable[..., RunningAgent]
) -> None:
    agent = make_agent()
    other = cluster.authn.issue("gpunode", "gpunode-collector", (AUDIENCE,))

    status, _, body = await asyncio.to_thread(ask, agent, tls, token=other)

    assert status == 403
    assert b"system:serviceaccount:gpunode:gpunode-collector may not" in body


async def test_the_bots_token_for_another_audience_is_refused_with_401(
    tls: Tls, make_agent: Callable[..., RunningAgent]
) -> None:
    agent = make_agent()

    # the bot's API token: good for the API server, not for the agents' audience
    status, _, body = await asyncio.to_thread(ask, agent, tls, token=BOT_TOKEN)

    assert status == 401
    assert b"not accepted" in body


async def test_a_token_the_review_rejects_is_refused_with_401(
    tls: Tls, make_agent: Callable[..., RunningAgent]
) -> None:
    agent = make_agent()

    status, _, _ = await asyncio.to_thread(ask, agent, tls, token="a-forged-token")

    assert status == 401


async def test_an_agent_that_may_not_review_tokens_answers_503_not_evidence(
    cluster: KubeSim, tls: Tls, make_agent: Callable[..., RunningAgent]
) -> None:
    # the bot's own API token has no `tokenreviews create`: the review is refused (403)
    agent = make_agent(api_token=BOT_TOKEN)

    status, _, body = await asyncio.to_thread(ask, agent, tls, token=bot_token(cluster))

    assert status == 503
    assert b"refused the TokenReview (HTTP 403)" in body


async def test_an_answer_over_the_size_bound_is_refused_not_sent(
    cluster: KubeSim, tls: Tls, make_agent: Callable[..., RunningAgent]
) -> None:
    agent = make_agent(max_response_bytes=2048)

    status, _, body = await asyncio.to_thread(ask, agent, tls, token=bot_token(cluster))

    assert status == 500
    assert b"over the agent's limit of 2048" in body


@pytest.mark.parametrize("method", ["POST", "PUT", "DELETE"])
async def test_the_agent_serves_no_method_but_get(
    cluster: KubeSim, tls: Tls, make_agent: Callable[..., RunningAgent], method: str
) -> None:
    agent = make_agent()

    status, _, _ = await asyncio.to_thread(
        ask, agent, tls, token=bot_token(cluster), method=method, body=b"{}"
    )

    assert status == 405


async def test_the_agent_serves_no_other_path_and_takes_no_body(
    cluster: KubeSim, tls: Tls, make_agent: Callable[..., RunningAgent]
) -> None:
    agent = make_agent()
    token = bot_token(cluster)

    other, _, _ = await asyncio.to_thread(ask, agent, tls, token=token, path="/proc/1/environ")
    with_body, _, _ = await asyncio.to_thread(ask, agent, tls, token=token, body=b"x" * 10)

    assert (other, with_body) == (404, 413)


async def test_a_client_that_speaks_no_tls_gets_nothing(
    make_agent: Callable[..., RunningAgent],
) -> None:
    agent = make_agent()

    def plain() -> bytes:
        with socket.create_connection((agent.address, agent.port), timeout=30) as sock:
            sock.sendall(b"GET /v1/evidence HTTP/1.0\r\n\r\n")
            chunks = []
            while chunk := sock.recv(4096):
                chunks.append(chunk)
            return b"".join(chunks)

    answer = await asyncio.to_thread(plain)

    assert b"HTTP/1" not in answer and b"meminfo" not in answer


async def test_the_token_is_never_logged(
    cluster: KubeSim,
    tls: Tls,
    make_agent: Callable[..., RunningAgent],
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)
    agent = make_agent()
    good, other = bot_token(cluster), "forged-token-value-1234"

    await asyncio.to_thread(ask, agent, tls, token=good)
    await asyncio.to_thread(ask, agent, tls, token=other)

    logged = caplog.text
    assert "GET /v1/evidence" in logged  # the access log is there ...
    assert good not in logged and other not in logged  # ... without the tokens


async def test_an_idle_connection_is_closed_by_the_agents_request_timeout(
    make_agent: Callable[..., RunningAgent],
) -> None:
    agent = make_agent(request_timeout_s=1.0)

    def idle() -> bytes:
        # connects, sends nothing; without the agent's timeout this recv waits 120 s and
        # raises TimeoutError
        with socket.create_connection((agent.address, agent.port), timeout=120) as sock:
            return sock.recv(1)

    assert await asyncio.to_thread(idle) == b""


async def test_connections_beyond_the_cap_are_closed_before_tls(
    cluster: KubeSim, tls: Tls, make_agent: Callable[..., RunningAgent]
) -> None:
    agent = make_agent(max_connections=2, request_timeout_s=120.0)
    context = ssl.create_default_context(cafile=str(tls.ca))

    def third_while_two_are_open() -> str:
        held = [socket.create_connection((agent.address, agent.port), timeout=60) for _ in range(2)]
        try:
            raw = socket.create_connection((agent.address, agent.port), timeout=60)
            try:
                context.wrap_socket(raw, server_hostname=SERVER_NAME).close()
            except (ssl.SSLError, ConnectionError) as exc:
                return type(exc).__name__
            return "handshake done"
        finally:
            for sock in held:
                sock.close()

    refused = await asyncio.to_thread(third_while_two_are_open)
    status = 0
    for _ in range(120):  # the held connections' threads end as they see them closed
        try:
            status, _, _ = await asyncio.to_thread(ask, agent, tls, token=bot_token(cluster))
            break
        except (ssl.SSLError, ConnectionError):
            await asyncio.sleep(0.5)

    assert refused != "handshake done"
    assert status == 200  # the slots came back when the held connections closed


@pytest.mark.parametrize(
    ("change", "says"),
    [
        ({"--allow": "bob"}, "--allow must name the bot's ServiceAccount"),
        ({"--tls-key": "/nonexistent/tls.key"}, "mount the gpunode-agent-tls Secret"),
        ({"--api-server": "file:///etc/passwd"}, "--api-server must be an https://"),
        ({"--max-response-bytes": "10"}, "--max-response-bytes >= 1024"),
    ],
)
def test_gpunode_agent_refuses_bad_settings_saying_what_to_do(
    tls: Tls, capsys: pytest.CaptureFixture[str], change: dict[str, str], says: str
) -> None:
    from bot.cli.main import main

    args = {
        "--tls-cert": str(tls.cert),
        "--tls-key": str(tls.key),
        "--allow": "system:serviceaccount:gpunode:gpunode",
        "--api-server": "https://127.0.0.1:6443",
        "--port": "0",
        **change,
    }

    code = main(["agent", *(x for pair in args.items() for x in pair)])

    assert code == 1
    assert says in capsys.readouterr().err


def test_gpunode_agent_on_a_taken_port_names_it_and_what_to_change(
    tls: Tls, capsys: pytest.CaptureFixture[str]
) -> None:
    from bot.cli.main import main

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        code = main(
            [
                "agent",
                *("--tls-cert", str(tls.cert), "--tls-key", str(tls.key)),
                *("--allow", "system:serviceaccount:gpunode:gpunode"),
                *("--api-server", "https://127.0.0.1:6443", "--listen", "127.0.0.1"),
                *("--port", str(port)),
            ]
        )

    err = capsys.readouterr().err
    assert code == 1
    assert f"cannot listen on 127.0.0.1:{port} (Address already in use)" in err
    assert "choose another --port" in err and "Traceback" not in err
