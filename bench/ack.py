"""Benchmark: time to the HTTP acknowledgement of signed slash commands under load.

gpunode must answer Slack within 3 s whatever it is doing. Setup, as in production: the
Kubernetes and Slack endpoints (here the stand-ins, ``seed`` scenario) run in another
process; the bot runs in this one. Load: 8 diagnoses are kept in flight the whole time (each
runs the diagnostic Job through the Kubernetes stand-in, analyses and posts to the Slack
stand-in; a finished one is replaced at once), while 200 signed ``/gpunode status`` commands
are sent, 64 in flight at a time; the time from sending each request to its HTTP response
is recorded.

Also in flight the whole time, in the bot's process: one large ``top`` after another
(``Gateway.gpu_node_loads`` with the fleet cache off) over a synthetic fleet of
``--top-nodes`` nodes (30 pods each) served by a second stand-in in its own process.

Baseline, in the same run, alternating round by round: a bare Bolt AsyncApp whose
``/gpunode`` handler only calls ``ack()``, served the same way (aiohttp, loopback) from a
process of its own (so it absorbs none of the bot's blocking; the machine carries the same
load), under the same 200-command load. Medians over rounds of the per-round p50 and p99.
The bot's worst event-loop stall during the rounds is reported too.

The commands are sent from the bot's process (its event loop runs the sender beside the bot,
for both apps), or with ``--client-process`` from a process of their own, so that the bot's
loop serves only the bot, as in production, and each app's time is its own answer's.

    .venv/bin/python bench/ack.py [--rounds 15] [--top-nodes 500] [--client-process]

Rounds are noisy one by one (a diagnosis' analysis lands in some rounds and not others:
p99 of single rounds ranged 40-190 ms for both apps), hence 15 rounds by default.

Last line: {"bench": "ack", "metric": "p99_ms_median", "value", "baseline", "ratio",
"target": 1.2, "p50_ms": ..., "baseline_p50_ms": ..., "max_loop_stall_ms": ...,
"client_process": ...}
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import hashlib
import hmac
import itertools
import json
import multiprocessing as mp
import statistics
import time
from multiprocessing.connection import Connection
from urllib.parse import urlencode

import aiohttp
from aiohttp import web
from slack_bolt.async_app import AsyncApp
from slack_sdk.web.async_client import AsyncWebClient

from bot.core.model.clusters import NodeRef
from gpunode_sandbox.demo import SIGNING_SECRET, running_bot, running_standins
from gpunode_sandbox.story import ALICE, CHANNEL

COMMANDS, CONCURRENCY, DIAGNOSES = 200, 64, 8
COMMAND_TEXT = "status"
NODES = ("gpu-node-01", "gpu-node-02")


#: a unique trigger_id per command, as Slack sends: the bot drops byte-identical replays
_SEQUENCE = itertools.count()


def signed(text: str, *, user: str = ALICE) -> tuple[bytes, dict[str, str]]:
    body = urlencode(
        {
            "token": "t",
            "team_id": "T0GPUNODE",
            "team_domain": "bench",
            "channel_id": CHANNEL,
            "channel_name": "gpu-incidents",
            "user_id": user,
            "user_name": "alice",
            "command": "/gpunode",
            "text": text,
            "api_app_id": "A0",
            "is_enterprise_install": "false",
            "response_url": "http://127.0.0.1:9/unused",
            "trigger_id": f"1.2.bench{next(_SEQUENCE)}",
        }
    ).encode()
    ts = str(int(time.time()))
    base = b"v0:" + ts.encode() + b":" + body
    sig = "v0=" + hmac.new(SIGNING_SECRET.encode(), base, hashlib.sha256).hexdigest()
    return body, {
        "Content-Type": "application/x-www-form-urlencoded",
        "X-Slack-Request-Timestamp": ts,
        "X-Slack-Signature": sig,
    }


async def load(session: aiohttp.ClientSession, url: str) -> list[float]:
    gate = asyncio.Semaphore(CONCURRENCY)
    times: list[float] = []

    async def one() -> None:
        body, headers = signed(COMMAND_TEXT)
        async with gate:
            start = time.perf_counter()
            async with session.post(url, data=body, headers=headers) as resp:
                answer = await resp.read()
                if resp.status != 200:
                    raise RuntimeError(f"HTTP {resp.status} from {url}: {answer[:300]!r}")
            times.append((time.perf_counter() - start) * 1000)

    await asyncio.gather(*(one() for _ in range(COMMANDS)))
    return times


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def client_process(conn: Connection) -> None:
    """Child process (``--client-process``): send a round of commands to each URL the parent
    names and answer their times, until it names None."""

    async def main() -> None:
        loop = asyncio.get_running_loop()
        async with aiohttp.ClientSession() as session:
            while (url := await loop.run_in_executor(None, conn.recv)) is not None:
                conn.send(await load(session, url))

    asyncio.run(main())


def standins(conn: Connection) -> None:
    """Child process: run the stand-ins until the parent says stop."""

    async def main() -> None:
        async with running_standins("seed") as (kube, slack):
            conn.send((kube.url, slack.api_url))
            await asyncio.get_running_loop().run_in_executor(None, conn.recv)

    asyncio.run(main())


def bare_process(conn: Connection, api_url: str) -> None:
    """Child process: the bare Bolt app, until the parent says stop."""

    async def main() -> None:
        runner, url = await bare_app(api_url)
        conn.send(url)
        await asyncio.get_running_loop().run_in_executor(None, conn.recv)
        await runner.cleanup()

    asyncio.run(main())


async def keep_topping(url: str, stop: asyncio.Event) -> int:
    """One large ``top`` after another through the bot's gateway code, until ``stop``."""
    from bot.config import KubeSettings
    from bot.kube.gateway import Gateway
    from gpunode_sandbox.kubesim.access import BOT_TOKEN

    gw = Gateway.from_settings(
        KubeSettings(
            mode="server",
            server=url,
            token=BOT_TOKEN,
            verify_tls=False,
            request_timeout_s=300,
            fleet_cache_s=0,
        )
    )
    done = 0
    try:
        while not stop.is_set():
            await gw.gpu_node_loads()
            done += 1
    finally:
        gw.close()
    return done


async def bare_app(api_url: str) -> tuple[web.AppRunner, str]:
    app = AsyncApp(
        client=AsyncWebClient(token="xoxb-demo", base_url=api_url),
        signing_secret=SIGNING_SECRET,
    )

    @app.command("/gpunode")
    async def only_ack(ack):  # type: ignore[no-untyped-def]
        await ack()

    runner = web.AppRunner(app.web_app(path="/slack/events"))
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    return runner, f"http://127.0.0.1:{port}/slack/events"


async def keep_diagnosing(runtime: object, stop: asyncio.Event) -> int:
    """Keep DIAGNOSES diagnoses in flight until ``stop``; returns how many completed."""
    diagnose = runtime.services.diagnose  # type: ignore[attr-defined]
    done = 0

    async def worker(i: int) -> None:
        nonlocal done
        while not stop.is_set():
            at = NodeRef(cluster=diagnose.clusters.default, node=NODES[i % len(NODES)])
            await diagnose.diagnose(at, channel=CHANNEL, user=ALICE)
            done += 1

    await asyncio.gather(*(worker(i) for i in range(DIAGNOSES)))
    return done


async def measure(
    rounds: int,
    kube_url: str,
    slack_api: str,
    bare_url: str,
    fleet_url: str,
    *,
    before_response: bool = False,
    client: Connection | None = None,
) -> dict[str, object]:
    from bot.telemetry.lag import LoopLag
    from bot.wiring.warming import warm_up

    async with (
        running_bot(kube_url=kube_url, slack_api_url=slack_api) as (runtime, bot_url, _),
        aiohttp.ClientSession() as session,
    ):
        await warm_up(runtime)  # as `gpunode serve` does after start-up (bot.wiring.warming)
        if before_response:  # the evaluation of Bolt's process_before_response (issue #25)
            runtime.app._process_before_response = True
            runtime.app._async_listener_runner.process_before_response = True
        targets = {"gpunode": f"{bot_url}/slack/events", "bare": bare_url}

        async def one_round(url: str) -> list[float]:
            if client is None:  # sent from this process, beside the bot
                return await load(session, url)

            def ask() -> list[float]:
                assert client is not None
                client.send(url)
                times: list[float] = client.recv()
                return times

            return await asyncio.get_running_loop().run_in_executor(None, ask)

        p50: dict[str, list[float]] = {"gpunode": [], "bare": []}
        p99: dict[str, list[float]] = {"gpunode": [], "bare": []}
        for name in targets:  # warm-up: auth.test, lazy imports, first connections
            await one_round(targets[name])
        stop = asyncio.Event()
        background = asyncio.create_task(keep_diagnosing(runtime, stop))
        topping = asyncio.create_task(keep_topping(fleet_url, stop))
        await asyncio.sleep(1.0)  # let the diagnoses reach a steady state
        lag = LoopLag(interval_s=0.02)
        lag.start()
        for r in range(rounds):
            order = ("gpunode", "bare") if r % 2 == 0 else ("bare", "gpunode")
            for name in order:
                times = await one_round(targets[name])
                p50[name].append(pct(times, 0.50))
                p99[name].append(pct(times, 0.99))
                print(
                    f"round {r + 1} {name:8s} p50 {p50[name][-1]:7.1f} ms  "
                    f"p99 {p99[name][-1]:7.1f} ms",
                    flush=True,
                )
        await lag.stop()
        stop.set()
        diagnosed = await background
        tops = await topping
        await runtime.services.bg.drain(timeout_s=120)
    value, baseline = statistics.median(p99["gpunode"]), statistics.median(p99["bare"])
    return {
        "bench": "ack",
        "metric": "p99_ms_median",
        "value": round(value, 1),
        "baseline": round(baseline, 1),
        "ratio": round(value / baseline, 3),
        "target": 1.2,
        "p50_ms": round(statistics.median(p50["gpunode"]), 1),
        "baseline_p50_ms": round(statistics.median(p50["bare"]), 1),
        "rounds": rounds,
        "diagnoses_completed": diagnosed,
        "tops_completed": tops,
        "max_loop_stall_ms": round(lag.max_s * 1000, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--top-nodes", type=int, default=500)
    parser.add_argument(
        "--process-before-response",
        action="store_true",
        help="the bot's Bolt app answers when the listener returns (no 10 ms ack poll)",
    )
    parser.add_argument(
        "--client-process",
        action="store_true",
        help="send the commands from a process of their own, not from the bot's (whose event "
        "loop then serves only the bot, as in production)",
    )
    args = parser.parse_args()
    from gpunode_sandbox.kubesim.process import separate_process

    ctx = mp.get_context("spawn")
    parent, child = ctx.Pipe()
    proc = ctx.Process(target=standins, args=(child,), daemon=True)
    proc.start()
    bare_parent, bare_child = ctx.Pipe()
    bare: mp.process.BaseProcess | None = None
    client_parent, client_child = ctx.Pipe()
    sender: mp.process.BaseProcess | None = None
    try:
        if args.client_process:
            sender = ctx.Process(target=client_process, args=(client_child,), daemon=True)
            sender.start()
        kube_url, slack_api = parent.recv()
        bare = ctx.Process(target=bare_process, args=(bare_child, slack_api), daemon=True)
        bare.start()
        bare_url = bare_parent.recv()
        fleet = {"nodes": args.top_nodes, "pods": args.top_nodes * 30}
        with separate_process(**fleet) as (fleet_url, _):
            result = asyncio.run(
                measure(
                    args.rounds,
                    kube_url,
                    slack_api,
                    bare_url,
                    fleet_url,
                    before_response=args.process_before_response,
                    client=client_parent if sender is not None else None,
                )
            )
        result["top_nodes"] = args.top_nodes
        result["process_before_response"] = args.process_before_response
        result["client_process"] = args.client_process
    finally:
        if sender is not None:
            with contextlib.suppress(OSError):
                client_parent.send(None)
            sender.join(timeout=30)
        for conn in (parent, bare_parent):
            with contextlib.suppress(OSError):
                conn.send("stop")
        proc.join(timeout=30)
        if bare is not None:
            bare.join(timeout=30)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
