"""Lists page as the API server pages them: ``limit`` items, a ``continue`` token that
resumes after the last key sent, every object exactly once in API order (namespace, name);
``spec.nodeName`` field selectors answered from the stand-in's index, with paging too."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import quote

from gpunode_sandbox.kubesim import KubeSim, Scenario
from tests.conftest import kube_call


async def _pages(sim: KubeSim, path: str, *, limit: int, query: str = "") -> list[list[Any]]:
    pages: list[list[Any]] = []
    token = ""
    while True:
        sep = "&continue=" + quote(token) if token else ""
        status, body = await kube_call(sim.url, "GET", f"{path}?limit={limit}{query}{sep}")
        assert status == 200, body
        pages.append(body["items"])
        token = body["metadata"].get("continue") or ""
        if not token:
            return pages


def _keys(items: list[Any]) -> list[tuple[str, str]]:
    return [(i["metadata"]["namespace"], i["metadata"]["name"]) for i in items]


async def test_paged_pods_come_once_each_in_api_order_in_pages_of_the_limit(
    make_kubesim: Callable[..., Awaitable[KubeSim]],
) -> None:
    sim = await make_kubesim(Scenario.synthetic_fleet(nodes=12, pods=230))
    pages = await _pages(sim, "/api/v1/pods", limit=50)
    _, whole = await kube_call(sim.url, "GET", "/api/v1/pods")
    keys = [k for page in pages for k in _keys(page)]
    assert [len(p) for p in pages[:-1]] == [50] * (len(pages) - 1)
    assert keys == sorted(keys) == _keys(whole["items"])
    assert len(keys) == len(set(keys)) == len(whole["items"])


async def test_a_node_field_selector_lists_only_that_nodes_pods_and_pages_them(
    make_kubesim: Callable[..., Awaitable[KubeSim]],
) -> None:
    sim = await make_kubesim(Scenario.synthetic_fleet(nodes=12, pods=230))
    node = "gpu-node-0001"
    _, whole = await kube_call(sim.url, "GET", "/api/v1/pods")
    expected = sorted(
        k
        for k, i in zip(_keys(whole["items"]), whole["items"], strict=True)
        if i["spec"].get("nodeName") == node
    )
    pages = await _pages(
        sim, "/api/v1/pods", limit=7, query="&fieldSelector=" + quote(f"spec.nodeName={node}")
    )
    assert len(pages) > 1 and [k for page in pages for k in _keys(page)] == expected


async def test_a_malformed_continue_token_is_a_bad_request(
    make_kubesim: Callable[..., Awaitable[KubeSim]],
) -> None:
    sim = await make_kubesim("seed")
    status, body = await kube_call(sim.url, "GET", "/api/v1/pods?limit=2&continue=bm90LWpzb24")
    assert status == 400 and "continue" in body["message"]


def test_twenty_thousand_replicas_get_twenty_thousand_names() -> None:
    from gpunode_sandbox.kubesim import scenarios as sc
    from gpunode_sandbox.kubesim.workloads import Placement

    big = sc.Workload(
        kind="Deployment",
        name="svc",
        namespace="team",
        replicas=20_000,
        nodes=["n1"],
        containers=[sc.Container(name="app", requests={"memory": "1Gi"})],
    )
    names = [name for name, _ in Placement.pods(big, ["n1"])]
    assert len(set(names)) == len(names) == 20_000


async def test_every_page_of_one_list_carries_the_first_pages_resource_version(
    make_kubesim: Callable[..., Awaitable[KubeSim]],
) -> None:
    """As the API server's: a client that watches from the list's version is sent every
    change made while it paged, so what it lists and watches adds up."""
    sim = await make_kubesim(Scenario.synthetic_fleet(nodes=12, pods=230))
    _, first = await kube_call(sim.url, "GET", "/api/v1/pods?limit=100")
    listed_at = first["metadata"]["resourceVersion"]
    changed = first["items"][0]
    sim.api.store.remove("pods", changed["metadata"]["namespace"], changed["metadata"]["name"])
    token = first["metadata"]["continue"]
    _, second = await kube_call(sim.url, "GET", f"/api/v1/pods?limit=100&continue={quote(token)}")
    assert second["metadata"]["resourceVersion"] == listed_at != str(sim.api.store.rv)
    token = second["metadata"]["continue"]
    sim.api.store.compact()
    status, body = await kube_call(
        sim.url, "GET", f"/api/v1/pods?limit=100&continue={quote(token)}"
    )
    assert (status, body["reason"]) == (410, "Expired")
