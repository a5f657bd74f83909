"""Benchmark: time to the HTTP acknowledgement of signed slash commands under load.

gpunode must answer Slack within 3 s whatever it is doing. Setup, as in production: the
Kubernetes and Slack endpoints (here the stand-ins, ``seed`` scenario) run in another
process; the bot runs in this one. Load: 8 diagnoses are kept in flight the whole time (each
runs the diagnostic Job through the Kubernetes stand-in, analyses and posts to the Slack
stand-in; a finished one is replaced at once), while 200 signed ``/gpunode status`` commands
are sent, 64 in flight at a time; the time from sending each request to its HTTP response
is recorded.

Baseline, in the same process and run, alternating round by round: a bare Bolt AsyncApp whose
``/gpunode`` handler only calls ``ack()``, served the same way (aiohttp, loopback), under the
same 200-command load while the same 8 diagnoses run in this process. Medians over rounds of
the per-round p50 and p99.

    .venv/bin/python bench/ack.py [--rounds 15]

Rounds are noisy one by one (a diagnosis' analysis lands in some rounds and not others:
p99 of single rounds ranged 40-190 ms for both apps), hence 15 rounds by default.

Last line: {"bench": "ack", "metric": "p99_ms_median", "value", "baseline", "ratio",
"target": 1.5, "p50_ms": ..., "baseline_p50_ms": ...}
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

from bot.sandbox.demo import SIGNING_SECRET, running_bot, running_standins
from bot.sandbox.story import ALICE, CHANNEL

COMMANDS, CONCURRENCY, DIAGNOSES = 200, 64, 8
COMMAND_TEXT = "status"
NODES = ("gpu-node-01", "gpu-node-02")


#: a unique trigger_id per command, as Slack sends: the bot drops byte-identical replays
_SEQUENCE = itertools.count()


def signed(text: str, *, user: str = ALICE) -> tuple[bytes, dict[str, str]]:
    body = urlencode(
        {
            "token": "t", "team_id": "T0GPUNODE", "team_domain": "bench",
            "channel_id": CHANNEL, "channel_name": "gpu-incidents", "user_id": user,
            "user_name": "alice", "command": "/gpunode", "text": text, "api_app_id": "A0",
            "is_enterprise_install": "false", "response_url": "http://127.0.0.1:9/unused",
            "trigger_id": f"1.2.bench{next(_SEQUENCE)}",
        }
    ).encode()  # fmt: skip
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


def standins(conn: Connection) -> None:
    """Child process: run the stand-ins until the parent says stop."""

    async def main() -> None:
        async with running_standins("seed") as (kube, slack):
            conn.send((kube.url, slack.api_url))
            await asyncio.get_running_loop().run_in_executor(None, conn.recv)

    asyncio.run(main())


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
            await diagnose.diagnose(NODES[i % len(NODES)], channel=CHANNEL, user=ALICE)
            done += 1

    await asyncio.gather(*(worker(i) for i in range(DIAGNOSES)))
    return done


async def measure(rounds: int, kube_url: str, slack_api: str) -> dict[str, object]:
    async with (
        running_bot(kube_url=kube_url, slack_api_url=slack_api) as (runtime, bot_url, _),
        aiohttp.ClientSession() as session,
    ):
        runner, bare_url = await bare_app(slack_api)
        targets = {"gpunode": f"{bot_url}/slack/events", "bare": bare_url}
        p50: dict[str, list[float]] = {"gpunode": [], "bare": []}
        p99: dict[str, list[float]] = {"gpunode": [], "bare": []}
        for name in targets:  # warm-up: auth.test, lazy imports, first connections
            await load(session, targets[name])
        stop = asyncio.Event()
        background = asyncio.create_task(keep_diagnosing(runtime, stop))
        await asyncio.sleep(1.0)  # let the diagnoses reach a steady state
        for r in range(rounds):
            order = ("gpunode", "bare") if r % 2 == 0 else ("bare", "gpunode")
            for name in order:
                times = await load(session, targets[name])
                p50[name].append(pct(times, 0.50))
                p99[name].append(pct(times, 0.99))
                print(
                    f"round {r + 1} {name:8s} p50 {p50[name][-1]:7.1f} ms  "
                    f"p99 {p99[name][-1]:7.1f} ms",
                    flush=True,
                )
        stop.set()
        diagnosed = await background
        await runtime.services.bg.drain(timeout_s=120)
        await runner.cleanup()
    value, baseline = statistics.median(p99["gpunode"]), statistics.median(p99["bare"])
    return {
        "bench": "ack",
        "metric": "p99_ms_median",
        "value": round(value, 1),
        "baseline": round(baseline, 1),
        "ratio": round(value / baseline, 3),
        "target": 1.5,
        "p50_ms": round(statistics.median(p50["gpunode"]), 1),
        "baseline_p50_ms": round(statistics.median(p50["bare"]), 1),
        "rounds": rounds,
        "diagnoses_completed": diagnosed,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--rounds", type=int, default=15)
    rounds = parser.parse_args().rounds
    ctx = mp.get_context("spawn")
    parent, child = ctx.Pipe()
    proc = ctx.Process(target=standins, args=(child,), daemon=True)
    proc.start()
    try:
        kube_url, slack_api = parent.recv()
        result = asyncio.run(measure(rounds, kube_url, slack_api))
    finally:
        with contextlib.suppress(OSError):
            parent.send("stop")
        proc.join(timeout=30)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
