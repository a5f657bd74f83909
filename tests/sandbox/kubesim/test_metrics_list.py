"""The pod metrics list as metrics-server answers it: a long list is sent while it is
encoded (chunked), its bytes exactly those of the list encoded in one piece; the figures
behind it come from each pod's own workload, whichever scenario the stand-in serves."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable

import aiohttp
import pytest

from gpunode_sandbox.kubesim import KubeSim, Scenario
from gpunode_sandbox.kubesim.access import ADMIN_TOKEN
from gpunode_sandbox.kubesim.app import PIECE_ITEMS
from gpunode_sandbox.kubesim.metrics import pod_metrics
from gpunode_sandbox.kubesim.resources import find
from gpunode_sandbox.kubesim.scenarios import load_scenario

PODS = "/apis/metrics.k8s.io/v1beta1/pods"


async def _get(sim: KubeSim, path: str) -> tuple[str | None, bytes]:
    headers = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
    async with (
        aiohttp.ClientSession() as session,
        session.get(sim.url + path, headers=headers) as r,
    ):
        assert r.status == 200
        return r.headers.get("Transfer-Encoding"), await r.read()


def _one_piece(sim: KubeSim) -> bytes:
    res = find("metrics.k8s.io", "v1beta1", "pods")
    assert res is not None
    # compact, as the API server (Go's encoding/json) writes it
    return json.dumps(sim.metrics(res, None, None), separators=(",", ":")).encode()


@pytest.mark.parametrize("clock_from_start", [False, True])
async def test_a_long_pod_metrics_list_streams_the_same_bytes_as_one_piece(
    make_kubesim: Callable[..., Awaitable[KubeSim]], clock_from_start: bool
) -> None:
    sim = await make_kubesim(
        Scenario.synthetic_fleet(nodes=60, pods=2 * PIECE_ITEMS + 300),
        clock_from_start=clock_from_start,
    )
    encoding, body = await _get(sim, PODS)
    assert encoding == "chunked"
    assert body == _one_piece(sim)
    assert len(json.loads(body)["items"]) > 2 * PIECE_ITEMS


async def test_a_short_pod_metrics_list_is_sent_whole_with_its_length(
    make_kubesim: Callable[..., Awaitable[KubeSim]],
) -> None:
    sim = await make_kubesim("seed")
    encoding, body = await _get(sim, PODS)
    assert encoding is None
    assert body == _one_piece(sim)


def test_each_stand_in_reads_its_own_scenarios_workloads() -> None:
    first, second = (KubeSim(load_scenario(name)) for name in ("seed", "daemonset-leak"))
    before = pod_metrics(first, None)
    other = pod_metrics(second, None)
    assert pod_metrics(first, None) == before
    assert pod_metrics(second, None) == other != before
