"""``gpunode serve`` in Socket Mode, end to end: the bot connects to the Slack stand-in with an
xapp- token (``start_socket_mode``, the code serve runs) and every command, click, modal
submission and thread reply reaches it as an envelope over the WebSocket, unsigned."""

from __future__ import annotations

import asyncio
import copy
import json
import os
import re
import signal
import sys
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import aiohttp
import pytest

from bot.errors import SlackError
from gpunode_sandbox.demo import POLICY, Demo, running_demo
from gpunode_sandbox.kubesim import KubeSim, load_scenario
from gpunode_sandbox.kubesim.access import BOT_TOKEN
from gpunode_sandbox.slacksim import SlackSim
from gpunode_sandbox.story import CHANNEL
from tests.e2e.conftest import (
    NODE,
    diagnose,
    failed_chat_calls,
    incident_roots,
    press,
    submit_modal,
    text_of,
    thread,
)

CHECKOUT = str(Path(__file__).resolve().parents[2])  # the code under test, not an install


def _serve_env(tmp_path: Path, kube_url: str, *, app_token: str) -> dict[str, str]:
    """The environment of a `gpunode serve` in Socket Mode against the Kubernetes stand-in at
    ``kube_url``, run from this checkout (not an installed gpunode)."""
    return {
        "PATH": os.environ.get("PATH", ""),
        "PYTHONPATH": CHECKOUT,
        "HOME": str(tmp_path),
        "GPUNODE_SLACK__BOT_TOKEN": "xoxb-serve",
        "GPUNODE_SLACK__APP_TOKEN": app_token,
        "GPUNODE_SLACK__SOCKET_MODE": "true",
        "GPUNODE_KUBE__MODE": "server",
        "GPUNODE_KUBE__SERVER": kube_url,
        "GPUNODE_KUBE__TOKEN": BOT_TOKEN,
        "GPUNODE_KUBE__VERIFY_TLS": "false",
        "GPUNODE_ACTIONS__POLICY_FILE": str(POLICY),
        "GPUNODE_STORE__PATH": str(tmp_path / "gpunode.db"),
        "GPUNODE_HTTP__HOST": "127.0.0.1",
        "GPUNODE_HTTP__PORT": "0",  # any free port: these tests talk to it over the socket
    }


pytestmark = pytest.mark.slow
ALICE = "U0ALICE"
SHUTDOWN_GRACE_S = 30  # Kubernetes' default terminationGracePeriodSeconds
ACK_DEADLINE_S = 3.0  # Slack's ack deadline, the same over a socket (slack.md 1.8)


@pytest.fixture
async def sock() -> AsyncIterator[Demo]:
    async with running_demo("seed", socket_mode=True) as d:
        yield d


def assert_every_envelope_acked_in_time(demo: Demo) -> None:
    sent = [e.envelope_id for e in demo.slack.envelopes]
    acked = {a.envelope_id: a.elapsed_s for a in demo.slack.acks if a.matched}
    assert sent and set(sent) == set(acked), "an envelope was not acked"
    slow = {k: v for k, v in acked.items() if v is None or v > ACK_DEADLINE_S}
    assert slow == {}, f"acks later than {ACK_DEADLINE_S}s: {slow}"


async def test_a_socket_mode_diagnose_opens_the_incident_thread_with_evidence(sock: Demo) -> None:
    result = await sock.slack.slash_command(ALICE, CHANNEL, f"diagnose {NODE}")
    await sock.drain()

    assert result.status == 200 and not result.late
    [root] = incident_roots(sock.slack)
    replies = [text_of(m) for m in thread(sock, str(root["ts"]))]
    assert any("Memory evidence" in r for r in replies)
    assert [e.type for e in sock.slack.envelopes] == ["slash_commands"]
    assert_every_envelope_acked_in_time(sock)
    assert sock.slack.driver.request_url == ""  # nothing went over HTTP
    opened = [c for c in sock.slack.calls if c.method == "apps.connections.open"]
    assert [c.ok for c in opened] == [True]
    assert sock.socket is not None and sock.slack.socket.connects == 1
    assert failed_chat_calls(sock.slack) == []


async def test_tier3_click_modal_and_apply_work_over_the_socket(sock: Demo) -> None:
    root_ts = await diagnose(sock)
    before = copy.deepcopy(sock.kube.get("deployments", "data-prep", "preprocess"))

    await press(sock, root_ts, ALICE, "gpunode_tier3")
    _, errors = await submit_modal(sock, ALICE, {"reason": ""})
    assert "reason" in errors  # the bot's response_action=errors ack, honoured
    _, errors = await submit_modal(
        sock,
        ALICE,
        {
            "reason": "memory incident",
            "memory_limit": "32Gi",
            "memory_request": "28Gi",
            "omp_num_threads": "4",
            "accept_oom": True,
        },
    )
    assert errors == {}
    await press(sock, root_ts, ALICE, "gpunode_apply")

    after = sock.kube.get("deployments", "data-prep", "preprocess")
    assert after is not None and before is not None and after != before
    [pandas] = after["spec"]["template"]["spec"]["containers"]
    assert pandas["resources"]["limits"]["memory"] == "32Gi"
    assert {"name": "OMP_NUM_THREADS", "value": "4"} in pandas.get("env", [])
    record = [a for a in await sock.runtime.store.audit_since(None) if a.tier == 3]
    assert [a.decision for a in record].count("executed") == 1
    kinds = [
        (e.type, e.payload.get("type"), e.accepts_response_payload) for e in sock.slack.envelopes
    ]
    assert ("interactive", "block_actions", False) in kinds
    assert kinds.count(("interactive", "view_submission", True)) == 2
    assert_every_envelope_acked_in_time(sock)
    assert failed_chat_calls(sock.slack) == []


async def test_a_thread_reply_arrives_as_an_event_and_joins_the_timeline(sock: Demo) -> None:
    root_ts = await diagnose(sock)

    await sock.slack.post_user_message(ALICE, CHANNEL, "restarting the notebook", thread_ts=root_ts)
    await sock.drain()

    [incident] = await sock.runtime.store.open_incidents(NODE)
    texts = [e.text for e in await sock.runtime.store.timeline(incident.id)]
    assert "restarting the notebook" in texts
    assert [e.type for e in sock.slack.envelopes][-1] == "events_api"
    assert_every_envelope_acked_in_time(sock)


async def test_no_signature_is_needed_and_the_http_route_is_closed_in_socket_mode(
    sock: Demo,
) -> None:
    # the bot has no signing secret at all: envelopes are not signed, and still work
    await diagnose(sock)
    assert all(e.type == "slash_commands" for e in sock.slack.envelopes)
    # ... so /slack/events must not exist: an unsigned POST would act as anyone
    form = f"command=/gpunode&text=diagnose+{NODE}&user_id=U0DAVE&channel_id={CHANNEL}"
    headers = {"Content-Type": "application/x-www-form-urlencoded"}
    async with (
        aiohttp.ClientSession() as http,
        http.post(f"{sock.bot_url}/slack/events", data=form, headers=headers) as r,
    ):
        assert r.status == 404
    async with aiohttp.ClientSession() as http, http.get(f"{sock.bot_url}/healthz") as r:
        assert r.status == 200 and json.loads(await r.text()) == {"ok": True}


@pytest.mark.parametrize(
    ("token", "error"),
    [("xoxb-demo", "not_allowed_token_type"), ("not-an-app-token", "invalid_auth")],
)
async def test_an_app_token_that_is_not_xapp_is_refused_at_connect(token: str, error: str) -> None:
    with pytest.raises(SlackError, match=error) as err:
        async with running_demo("seed", socket_mode=True, app_token=token):
            pytest.fail("the demo started with a refused app token")
    assert "GPUNODE_SLACK__APP_TOKEN" in err.value.message


async def _until(check: Callable[[], bool], *, timeout_s: float, what: str) -> None:
    deadline = time.monotonic() + timeout_s
    while not check():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        await asyncio.sleep(0.1)


@pytest.mark.parametrize(
    "sigint", [signal.SIG_DFL, signal.SIG_IGN], ids=["sigint-default", "sigint-inherited-ignored"]
)
async def test_gpunode_serve_in_socket_mode_connects_and_diagnoses(
    tmp_path: Path, sigint: signal.Handlers
) -> None:
    """The real ``gpunode serve`` process, against both stand-ins, over Socket Mode; SIGINT
    stops it even when it was started with SIGINT ignored, as a non-interactive shell starts a
    background job (it then never raised KeyboardInterrupt: the flake under CI load)."""
    kube = KubeSim(load_scenario("seed"))
    slack = SlackSim(signing_secret="unused", bot_token="xoxb-serve", socket_mode=True)
    env = _serve_env(tmp_path, await kube.start(), app_token="xapp-1-A0GPUNODE-serve")
    await slack.start()
    env["GPUNODE_SLACK__API_BASE_URL"] = slack.api_url
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "bot",
        "serve",
        env=env,
        cwd=tmp_path,
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.PIPE,
        preexec_fn=lambda: signal.signal(signal.SIGINT, sigint),
    )
    assert proc.stderr is not None
    # read stderr as it comes: a kill after a slow shutdown must not lose what was printed
    stderr_read = asyncio.create_task(proc.stderr.read())
    shutdown_timed_out = False
    try:
        # a serve start is seconds of CPU (imports, doctor, the warm-up): with both cores busy
        # it took over 30 s once; how fast it starts is not what this test checks
        await _until(lambda: bool(slack.socket.connections), timeout_s=120, what="serve to connect")
        result = await slack.slash_command(ALICE, CHANNEL, f"diagnose {NODE}")
        assert result.status == 200 and not result.late
        await _until(lambda: bool(incident_roots(slack)), timeout_s=30, what="the incident")
        root_ts = str(incident_roots(slack)[0]["ts"])
        await _until(
            lambda: any(
                "Memory evidence" in text_of(m) for m in slack.messages(CHANNEL, thread_ts=root_ts)
            ),
            timeout_s=30,
            what="the evidence",
        )
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            await asyncio.wait_for(proc.wait(), SHUTDOWN_GRACE_S)
        except TimeoutError:
            shutdown_timed_out = True
            proc.kill()
            await proc.wait()
        stderr = await stderr_read
        await slack.stop()
        await kube.stop()
    assert not shutdown_timed_out, f"no exit {SHUTDOWN_GRACE_S}s after SIGINT:\n{stderr.decode()}"
    assert b"socket mode" in stderr, stderr.decode()
    assert b"xapp-1-A0GPUNODE-serve" not in stderr  # the secret is never printed


@pytest.mark.parametrize("lang", ["zh-CN", "en"])
async def test_gpunode_serve_says_slack_refused_its_app_token_in_the_operators_language(
    tmp_path: Path, lang: str
) -> None:
    """The real ``gpunode serve --lang``: Slack refuses the app-level token at
    ``apps.connections.open``; serve exits 1 naming Slack's error and the setting to fix, in
    Chinese without English words (Slack's error code is quoted as it said it), or in the
    English it always printed."""
    from tests.render.test_catalogs import english_words

    kube = KubeSim(load_scenario("seed"))
    slack = SlackSim(signing_secret="unused", bot_token="xoxb-serve", socket_mode=True)
    env = _serve_env(tmp_path, await kube.start(), app_token="xapp-1-A0GPUNODE-revoked")
    await slack.start()
    slack.fail("apps.connections.open", error="invalid_auth")
    env["GPUNODE_SLACK__API_BASE_URL"] = slack.api_url
    try:
        proc = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "bot",
            "serve",
            "--lang",
            lang,
            env=env,
            cwd=tmp_path,
            stdout=asyncio.subprocess.DEVNULL,
            stderr=asyncio.subprocess.PIPE,
        )
        _, raw = await asyncio.wait_for(proc.communicate(), 120)
    finally:
        await slack.stop()
        await kube.stop()

    last = raw.decode().strip().splitlines()[-1]
    assert proc.returncode == 1 and last.startswith("gpunode: "), raw.decode()
    assert "invalid_auth" in last and "GPUNODE_SLACK__APP_TOKEN" in last, last
    if lang == "en":
        assert last == (
            "gpunode: Slack refused the app-level token for Socket Mode (invalid_auth): set "
            "GPUNODE_SLACK__APP_TOKEN to an xapp- token with the connections:write scope"
        )
    else:
        assert english_words(last) == [] and re.search("[\u4e00-\u9fff]", last), last
    assert b"xapp-1-A0GPUNODE-revoked" not in raw  # the secret is never printed
