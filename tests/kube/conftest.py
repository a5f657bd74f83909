"""Gateway fixtures: the real ``kubernetes`` client against the Kubernetes stand-in."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import pytest

from bot.config import KubeSettings
from bot.kube.gateway import Gateway
from bot.sandbox.kubesim import KubeSim

NAMESPACE = "gpunode"


def settings_for(url: str, **overrides: Any) -> KubeSettings:
    base = KubeSettings(
        mode="server",
        server=url,
        token="test-token",
        verify_tls=False,
        namespace=NAMESPACE,
        job_timeout_s=20,
    )
    return base.model_copy(update=overrides)


async def ensure_namespace(gw: Gateway, name: str = NAMESPACE) -> None:
    body = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}
    try:
        await asyncio.to_thread(gw.transport.request, "POST", "/api/v1/namespaces", body=body)
    except Exception as exc:  # already exists (scenario provides it)
        if getattr(exc, "status", None) != 409:
            raise


@pytest.fixture
async def make_gateway(
    make_kubesim: Callable[..., Awaitable[KubeSim]],
) -> AsyncIterator[Callable[..., Awaitable[tuple[Gateway, KubeSim]]]]:
    made: list[Gateway] = []

    async def make(
        scenario: Any = "seed", *, sim_kw: dict[str, Any] | None = None, **settings: Any
    ) -> tuple[Gateway, KubeSim]:
        sim = await make_kubesim(scenario, **(sim_kw or {}))
        gw = Gateway.from_settings(settings_for(sim.url, **settings))
        made.append(gw)
        await ensure_namespace(gw)
        return gw, sim

    yield make
    for gw in made:
        gw.close()


@pytest.fixture
async def gateway(
    make_gateway: Callable[..., Awaitable[tuple[Gateway, KubeSim]]],
) -> tuple[Gateway, KubeSim]:
    return await make_gateway()
