"""Shared fixtures: the Kubernetes API stand-in on a free loopback port.

``kubesim``: the seed scenario, started and stopped around one test.
``make_kubesim(name, **kw)``: start any scenario (or a ``Scenario`` object); all stopped after.
``kube_client_config(url)``: a ``kubernetes.client.Configuration`` pointed at a sim, as the
cluster admin (test setup); pass ``token=BOT_TOKEN`` to act with the bot's deployed rights.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import pytest

from bot.sandbox.kubesim import KubeSim, Scenario, load_scenario
from bot.sandbox.kubesim.access import ADMIN_TOKEN


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
