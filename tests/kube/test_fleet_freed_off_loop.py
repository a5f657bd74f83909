"""The fleet tally a new fleet read replaces (150,000 records on a 5,000-node fleet: 40 ms
of CPU to free) is freed on one of the cluster's threads, never on the event loop (#25)."""

from __future__ import annotations

import asyncio
import threading
import weakref
from collections.abc import Awaitable, Callable

from bot.kube.gateway import Gateway
from gpunode_sandbox.kubesim import KubeSim

MakeGateway = Callable[..., Awaitable[tuple[Gateway, KubeSim]]]


async def _freed_on(
    make_gateway: MakeGateway, replace: Callable[[Gateway], Awaitable[object]]
) -> str:
    gw, _ = await make_gateway(fleet_cache_s=0)
    freed = threading.Event()
    where: list[str] = []

    def note() -> None:
        where.append(threading.current_thread().name)
        freed.set()

    weakref.finalize(await gw.fleet(), note)  # nothing here holds the first tally
    # the step that received it ends (the loop lets go of its wake-up, which held it), as
    # a later command's would
    await asyncio.sleep(0)
    await replace(gw)
    assert await asyncio.to_thread(freed.wait, 30)
    return where[0]


async def test_the_tally_a_fleet_read_replaces_is_freed_off_the_event_loop(
    make_gateway: MakeGateway,
) -> None:
    async def read_again(gw: Gateway) -> object:
        return await gw.gpu_node_loads()

    assert await _freed_on(make_gateway, read_again) != threading.current_thread().name


async def test_the_tally_a_write_drops_is_freed_off_the_event_loop(
    make_gateway: MakeGateway,
) -> None:
    async def write(gw: Gateway) -> object:
        return await gw.cordon("gpu-node-01", dry_run=False)

    assert await _freed_on(make_gateway, write) != threading.current_thread().name
