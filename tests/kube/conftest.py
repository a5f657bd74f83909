"""Gateway fixtures: the real ``kubernetes`` client against the Kubernetes stand-in, with the
bot's token: the gateway has exactly the rights deploy/base grants it."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import pytest

from bot.config import KubeSettings
from bot.kube.gateway import Gateway
from gpunode_sandbox.kubesim import KubeSim
from gpunode_sandbox.kubesim.access import BOT_TOKEN

NAMESPACE = "gpunode"


def settings_for(url: str, **overrides: Any) -> KubeSettings:
    base = KubeSettings(
        mode="server",
        server=url,
        token=BOT_TOKEN,
        verify_tls=False,
        namespace=NAMESPACE,
        # generous: on two busy cores the real collector has taken over 20 s; a test about the
        # deadline sets its own
        job_timeout_s=120,
    )
    return base.model_copy(update=overrides)


def ensure_namespace(sim: KubeSim, name: str = NAMESPACE) -> None:
    """The namespace as an admin creates it (deploy/base already has ``gpunode``)."""
    if sim.get("namespaces", None, name) is None:
        sim.api.seed({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})


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
        ensure_namespace(sim)
        return gw, sim

    yield make
    for gw in made:
        gw.close()


@pytest.fixture
async def gateway(
    make_gateway: Callable[..., Awaitable[tuple[Gateway, KubeSim]]],
) -> tuple[Gateway, KubeSim]:
    return await make_gateway()
