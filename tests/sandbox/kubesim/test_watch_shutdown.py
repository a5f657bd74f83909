"""The stand-in ends its open watches when it shuts down, as the API server ends its
long-running requests when it terminates: a client reading a watch sees the answer end, well
formed, instead of the server's shutdown waiting out every watch it still serves."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable

import aiohttp

from gpunode_sandbox.kubesim import KubeSim
from gpunode_sandbox.kubesim.access import ADMIN_TOKEN

AUTH = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
WAIT_S = 30.0  # generous: the machine may be busy; nothing here is timed


async def test_a_watch_open_when_the_server_shuts_down_ends_well_formed_for_its_client(
    make_kubesim: Callable[..., Awaitable[KubeSim]],
) -> None:
    sim = await make_kubesim("seed")
    sim.bookmark_s = 3600.0  # nothing is written to the watch meanwhile
    async with aiohttp.ClientSession() as http:
        async with http.get(sim.url + "/api/v1/nodes", headers=AUTH) as listed:
            version = json.loads(await listed.read())["metadata"]["resourceVersion"]
        path = f"/api/v1/nodes?watch=true&timeoutSeconds=300&resourceVersion={version}"
        async with http.get(sim.url + path, headers=AUTH) as resp:
            assert resp.status == 200
            loop = asyncio.get_running_loop()
            deadline = loop.time() + WAIT_S
            while sim.api.store.open_watches() != 1:
                assert loop.time() < deadline, "the watch never opened"
                await asyncio.sleep(0.02)
            sim.api.store.end_watches()
            rest = await asyncio.wait_for(resp.content.read(), WAIT_S)  # to the answer's end
    assert rest == b""  # nothing happened since the list: no event, and no error line
    assert sim.api.store.open_watches() == 0
