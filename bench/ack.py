"""Benchmark: time to the HTTP acknowledgement of signed slash commands under load.

gpunode must answer Slack within 3 s whatever it is doing. Load per round: 8 diagnoses are
started (they run the diagnostic Job through the Kubernetes stand-in in the background), then
200 signed ``/gpunode status`` commands are sent, 64 in flight at a time, and the time from
sending each request to its HTTP response is recorded.

Baseline, in the same process and run, alternating round by round: a bare Bolt AsyncApp whose
``/gpunode`` handler only calls ``ack()``, served the same way (aiohttp, loopback), under the
same 200-command load while the same 8 diagnoses run. Medians over rounds of the per-round
p50 and p99.

    .venv/bin/python bench/ack.py [--rounds 5]

Last line: {"bench": "ack", "metric": "p99_ms_median", "value", "baseline", "ratio",
"target": 1.5, "p50_ms": ..., "baseline_p50_ms": ...}
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import hmac
import json
import statistics
import time
from urllib.parse import urlencode

import aiohttp
from aiohttp import web
from slack_bolt.async_app import AsyncApp
from slack_sdk.web.async_client import AsyncWebClient

from bot.sandbox.demo import SIGNING_SECRET, running_demo
from bot.sandbox.story import ALICE, CHANNEL

COMMANDS, CONCURRENCY, DIAGNOSES = 200, 64, 8
NODES = ("gpu-node-01", "gpu-node-02")


def signed(text: str, *, user: str = ALICE) -> tuple[bytes, dict[str, str]]:
    body = urlencode(
        {
            "token": "t", "team_id": "T0GPUNODE", "team_domain": "bench",
            "channel_id": CHANNEL, "channel_name": "gpu-incidents", "user_id": user,
            "user_name": "alice", "command": "/gpunode", "text": text, "api_app_id": "A0",
            "is_enterprise_install": "false", "response_url": "http://127.0.0.1:9/unused",
            "trigger_id": "1.2.bench",
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
        body, headers = signed("status")
        async with gate:
            start = time.perf_counter()
            async with session.post(url, data=body, headers=headers) as resp:
                await resp.read()
                if resp.status != 200:
                    raise RuntimeError(f"HTTP {resp.status} from {url}")
            times.append((time.perf_counter() - start) * 1000)

    await asyncio.gather(*(one() for _ in range(COMMANDS)))
    return times


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


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


async def main(rounds: int) -> dict[str, object]:
    async with running_demo("seed") as demo, aiohttp.ClientSession() as session:
        runner, bare_url = await bare_app(demo.slack.api_url)
        targets = {"gpunode": f"{demo.bot_url}/slack/events", "bare": bare_url}
        p50: dict[str, list[float]] = {"gpunode": [], "bare": []}
        p99: dict[str, list[float]] = {"gpunode": [], "bare": []}
        # warm-up: first requests pay for auth.test and lazy imports
        await load(session, targets["gpunode"])
        await load(session, targets["bare"])
        await demo.drain()
        for r in range(rounds):
            order = ("gpunode", "bare") if r % 2 == 0 else ("bare", "gpunode")
            for name in order:
                diagnoses = [
                    asyncio.create_task(
                        demo.runtime.services.diagnose.diagnose(
                            NODES[i % len(NODES)], channel=CHANNEL, user=ALICE
                        )
                    )
                    for i in range(DIAGNOSES)
                ]
                await asyncio.sleep(0.05)  # let them reach the cluster calls
                times = await load(session, targets[name])
                p50[name].append(pct(times, 0.50))
                p99[name].append(pct(times, 0.99))
                await asyncio.gather(*diagnoses)
                await demo.drain()
                print(
                    f"round {r + 1} {name:8s} p50 {p50[name][-1]:7.1f} ms  "
                    f"p99 {p99[name][-1]:7.1f} ms",
                    flush=True,
                )
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
    }


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    result = asyncio.run(main(parser.parse_args().rounds))
    print(json.dumps(result))
