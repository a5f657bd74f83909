"""A list answers each item exactly as a get of that item does, and never lends the store's
objects to anyone who could change them: lists encode the stored objects without copying
them (``KubeSim.served``), so these are the properties that sharing must keep."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from gpunode_sandbox.kubesim import KubeSim
from tests.conftest import kube_call

Obj = dict[str, Any]
COLLECTIONS = [
    ("/api/v1/pods", "/api/v1/namespaces/{ns}/pods/{name}"),
    ("/api/v1/nodes", "/api/v1/nodes/{name}"),
    ("/api/v1/events", "/api/v1/namespaces/{ns}/events/{name}"),
    (
        "/apis/policy/v1/poddisruptionbudgets",
        "/apis/policy/v1/namespaces/{ns}/poddisruptionbudgets/{name}",
    ),
]


async def _items_and_gets(sim: KubeSim, collection: str, one: str) -> list[tuple[Obj, Obj]]:
    status, listed = await kube_call(sim.url, "GET", collection)
    assert status == 200, listed
    pairs = []
    for item in listed["items"]:
        meta = item["metadata"]
        path = one.format(ns=meta.get("namespace", ""), name=meta["name"])
        status, got = await kube_call(sim.url, "GET", path)
        assert status == 200, got
        pairs.append((item, got))
    return pairs


@pytest.mark.parametrize("clock_from_start", [False, True], ids=["scenario clock", "shifted"])
@pytest.mark.parametrize(
    ("collection", "one"), COLLECTIONS, ids=[c.rsplit("/", 1)[-1] for c, _ in COLLECTIONS]
)
async def test_a_list_item_is_what_a_get_of_it_answers(
    make_kubesim: Callable[..., Awaitable[KubeSim]],
    clock_from_start: bool,
    collection: str,
    one: str,
) -> None:
    sim = await make_kubesim("seed", clock_from_start=clock_from_start)
    pairs = await _items_and_gets(sim, collection, one)
    assert pairs, f"the seed has no {collection}"
    for item, got in pairs:
        assert item == got


async def test_a_pdb_in_a_list_carries_its_computed_status(kubesim: KubeSim) -> None:
    status, listed = await kube_call(kubesim.url, "GET", "/apis/policy/v1/poddisruptionbudgets")
    assert status == 200
    budgets = {i["metadata"]["name"]: i for i in listed["items"]}
    assert budgets["jupyter-alice"]["status"]["currentHealthy"] == 1
    assert budgets["jupyter-alice"]["status"]["disruptionsAllowed"] == 0


async def test_a_shifted_clock_moves_the_stamps_a_list_shows_but_not_the_stored_ones(
    make_kubesim: Callable[..., Awaitable[KubeSim]],
) -> None:
    plain = await make_kubesim("seed")
    shifted = await make_kubesim("seed", clock_from_start=True)
    _, before = await kube_call(plain.url, "GET", "/api/v1/events")
    _, moved = await kube_call(shifted.url, "GET", "/api/v1/events")
    _, after = await kube_call(shifted.url, "GET", "/api/v1/events")
    stamps = [e.get("lastTimestamp") for e in before["items"]]
    assert any(stamps)
    assert [e.get("lastTimestamp") for e in moved["items"]] != stamps
    # shifting is done on the way out, each time from the stored stamps, never twice
    assert moved["items"] == after["items"]


async def test_changing_what_the_test_api_returns_leaves_the_served_objects_alone(
    kubesim: KubeSim,
) -> None:
    pods = kubesim.list("pods")
    pods[0]["metadata"]["labels"] = {"changed": "by-a-caller"}
    _, listed = await kube_call(kubesim.url, "GET", "/api/v1/pods")
    first = pods[0]["metadata"]["name"]
    served = next(p for p in listed["items"] if p["metadata"]["name"] == first)
    assert served["metadata"].get("labels") != {"changed": "by-a-caller"}
