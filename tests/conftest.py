"""Shared fixtures: the Kubernetes API stand-in on a free loopback port.

``kubesim``: the seed scenario, started and stopped around one test.
``make_kubesim(name, **kw)``: start any scenario (or a ``Scenario`` object); all stopped after.
``kube_client_config(url)``: a ``kubernetes.client.Configuration`` pointed at a sim, as the
cluster admin (test setup); pass ``token=BOT_TOKEN`` to act with the bot's deployed rights.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from typing import TYPE_CHECKING, Any

import pytest
from hypothesis import HealthCheck, settings

from bot.wiring.heap import settle_heap
from gpunode_sandbox.kubesim import KubeSim, Scenario, load_scenario
from gpunode_sandbox.kubesim.access import ADMIN_TOKEN
from gpunode_sandbox.kubesim.store import CHECK_ENCODED

if TYPE_CHECKING:
    from bot.offloading import Offloader

# A stand-in's stored objects are read-only (Store's contract: every change is a put, as every
# change through the API server bumps the resourceVersion); its answers reuse each object's
# encoding until the next put. In the suite, every reuse encodes again and fails loudly when a
# test (or the stand-in) changed a stored object in place, here and in the stand-ins the
# tests start in processes of their own (the environment is inherited).
os.environ.setdefault(CHECK_ENCODED, "1")

# Hypothesis judges what a property test finds, never how fast: its default 200 ms deadline per
# example and its too-slow health check fail a correct test on a busy machine (two cores shared
# by the whole suite), so the suite's profile has neither. A test's own @settings still wins.
settings.register_profile(
    "gpunode", deadline=None, suppress_health_check=[HealthCheck.too_slow], print_blob=True
)
settings.load_profile("gpunode")


@pytest.fixture(autouse=True, scope="session")
def _heap_settled_as_serve_leaves_it() -> None:
    """The suite's bots run in its workers' processes, as `gpunode serve` runs after its
    warm-up (``bot.wiring.heap.settle_heap``): one collection, then every object alive (each
    module the worker imported to collect the tests) frozen out of the full collections, and
    the young generation collected every 50,000 allocations. Without it, a full collection
    walks the whole worker's heap on the bot's loop: seen once as 3.29 s for 679,842 objects
    under a load average of 46 on 2 CPUs, during a click, past Slack's 3 s ``trigger_id``
    lifetime (tests/e2e/conftest.py's stall report named it). Once per worker, before its
    first test."""
    settle_heap()


@pytest.fixture(scope="session")
def shared_analysis_worker() -> Iterator[Offloader]:
    """Every demo bot of this test process (``running_demo``) analyses and charts in one
    worker process, started by the first diagnosis and kept, instead of one started for each
    diagnosis as ``serve`` does (``gpunode_sandbox.demo.share_analysis_worker``). Each such
    worker imported matplotlib again: 216 of them in one run of tests/e2e, about 1.4 s of CPU
    each, a third of that run's CPU. The folders whose tests run demos (e2e, browser,
    telemetry) ask for it in their conftest, so a process that runs none of them neither
    imports the demo (1.5 s) nor makes one. The per-diagnosis worker is what
    ``own_analysis_worker`` gives back (tests/e2e/test_serving_offloads.py), and
    tests/services/test_analysing.py checks its lifecycle."""
    from bot.offloading import Offloader
    from bot.wiring.runtime import IMPORT_CHARTS
    from gpunode_sandbox.demo import share_analysis_worker

    offload = Offloader(process=True, name="analysis", prime=IMPORT_CHARTS)
    before = share_analysis_worker(offload)
    yield offload
    share_analysis_worker(before)
    offload.close()


@pytest.fixture
def own_analysis_worker() -> Iterator[None]:
    """This test's demos each start their own analysis worker per diagnosis, as ``serve``."""
    from gpunode_sandbox.demo import share_analysis_worker

    shared = share_analysis_worker(None)
    yield
    share_analysis_worker(shared)


def kube_client_config(url: str, *, token: str = ADMIN_TOKEN) -> Any:
    from kubernetes import client

    cfg = client.Configuration()
    cfg.host = url
    cfg.api_key = {"authorization": f"Bearer {token}"}
    cfg.verify_ssl = False
    return cfg


@pytest.fixture
async def make_kubesim() -> AsyncIterator[Callable[..., Awaitable[KubeSim]]]:
    started: list[KubeSim] = []

    async def make(name: str | Scenario = "seed", **kw: Any) -> KubeSim:
        scenario = name if isinstance(name, Scenario) else load_scenario(name)
        sim = KubeSim(scenario, **kw)
        await sim.start()
        started.append(sim)
        return sim

    yield make
    for sim in started:
        await sim.stop()


@pytest.fixture
async def kubesim(make_kubesim: Callable[..., Awaitable[KubeSim]]) -> KubeSim:
    return await make_kubesim("seed")


async def kube_call(
    url: str,
    method: str,
    path: str,
    *,
    token: str | None = ADMIN_TOKEN,
    body: Any = None,
    content_type: str = "application/json",
    headers: dict[str, str] | None = None,
) -> tuple[int, Any]:
    """One raw request to a stand-in: (HTTP status, parsed JSON body or text)."""
    import json

    import aiohttp

    sent = dict(headers or {})
    if token is not None:
        sent["Authorization"] = f"Bearer {token}"
    data = None
    if body is not None:
        data = json.dumps(body)
        sent["Content-Type"] = content_type
    async with (
        aiohttp.ClientSession() as http,
        http.request(method, url + path, data=data, headers=sent) as resp,
    ):
        text = await resp.text()
        try:
            return resp.status, json.loads(text)
        except ValueError:
            return resp.status, text


# the PostgreSQL server (session) and a fresh database per test: tests/pgserver.py
from tests.pgserver import pg_dsn, pg_server  # noqa: E402, F401


@pytest.fixture(autouse=True)
def _no_demo_store_of_the_developer(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``$XDG_STATE_HOME`` in a temporary directory: the CLI falls back to the demo's store
    (``bot.cli.common.cli_settings``), and a test must neither read nor write the one a
    developer's ``make demo`` left in ``~/.local/state``."""
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path_factory.mktemp("xdg-state")))
