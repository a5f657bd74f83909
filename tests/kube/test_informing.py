"""The informer lists, then follows the watch with real semantics (served by the stand-in over
HTTP): resourceVersions, bookmarks that keep a quiet watch current, and 410 Gone after
compaction, which makes it list again."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

from bot.config import KubeSettings
from bot.kube.gateway import Gateway
from bot.kube.informing import Informer, slim_event
from bot.kube.transport import WatchInterrupt
from gpunode_sandbox.kubesim import KubeSim
from gpunode_sandbox.kubesim.access import BOT_TOKEN
from gpunode_sandbox.kubesim.recorder import record

WAIT_S = 60.0  # generous: the machine may be busy; nothing here is timed


async def until(check: Callable[[], bool], what: str) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + WAIT_S
    while not check():
        assert loop.time() < deadline, f"gave up waiting: {what}"
        await asyncio.sleep(0.05)


def _gateway(sim: KubeSim) -> Gateway:
    return Gateway.from_settings(
        KubeSettings(mode="server", server=sim.url, token=BOT_TOKEN, verify_tls=False)
    )


def _pod_events(gw: Gateway, *, watch_s: int = 1, **kw: Any) -> Informer[dict[str, Any]]:
    return Informer(
        gw.transport,
        "/api/v1/events",
        slim=slim_event,
        field_selector="involvedObject.kind=Pod",
        watch_s=watch_s,
        **kw,
    )


def _names(informer: Informer[dict[str, Any]]) -> set[str]:
    return {e["metadata"]["name"] for e in informer.items()}


def _a_pod(sim: KubeSim) -> dict[str, Any]:
    return next(iter(sim.api.store.list("pods")))


def _unrelated_writes(sim: KubeSim, n: int = 5) -> None:
    for i in range(n):
        sim.api.store.put("configmaps", {"metadata": {"name": f"noise-{i}", "namespace": "x"}})


async def test_an_informer_holds_the_listed_events_and_follows_the_watch(
    make_kubesim: Callable[..., Awaitable[KubeSim]],
) -> None:
    sim = await make_kubesim("seed")
    gw = _gateway(sim)
    informer = _pod_events(gw)
    listed = {
        e["metadata"]["name"]
        for e in sim.api.store.list("events")
        if e["involvedObject"].get("kind") == "Pod"
    }
    try:
        informer.start()
        await until(informer.synced.is_set, "the first list")
        assert _names(informer) == listed
        pod = _a_pod(sim)
        record(sim.api, pod, "BackOff", "Back-off restarting failed container", component="kubelet")
        record(
            sim.api,
            {"kind": "Node", "metadata": {"name": "gpu-node-01"}},
            "NodeNotReady",
            "not ready",
            component="node-controller",
        )
        await until(lambda: len(_names(informer)) == len(listed) + 1, "the watched event")
        (new,) = _names(informer) - listed
        held = next(e for e in informer.items() if e["metadata"]["name"] == new)
        assert (held["involvedObject"]["name"], held["reason"]) == (
            pod["metadata"]["name"],
            "BackOff",
        )
        assert "managedFields" not in held["metadata"]  # slim: only what is read
        sim.api.store.remove("events", held["metadata"]["namespace"], new)
        await until(lambda: new not in _names(informer), "the deletion")
        assert informer.lists == 1
    finally:
        informer.stop()
        gw.close()


async def test_bookmarks_keep_a_quiet_watch_current_so_compaction_costs_no_relist(
    make_kubesim: Callable[..., Awaitable[KubeSim]],
) -> None:
    sim = await make_kubesim("seed")
    sim.bookmark_s = 0.2
    gw = _gateway(sim)
    informer = _pod_events(gw)
    try:
        informer.start()
        await until(informer.synced.is_set, "the first list")
        _unrelated_writes(sim)
        now = str(sim.api.store.rv)
        await until(lambda: informer.resource_version == now, "a bookmark at the store's version")
        sim.api.store.compact()
        record(sim.api, _a_pod(sim), "Killing", "Stopping container", component="kubelet")
        await until(lambda: any(e["reason"] == "Killing" for e in informer.items()), "the event")
        assert informer.lists == 1
    finally:
        informer.stop()
        gw.close()


async def test_a_watch_from_a_compacted_version_gets_410_and_the_informer_lists_again(
    make_kubesim: Callable[..., Awaitable[KubeSim]],
) -> None:
    sim = await make_kubesim("seed")
    gw = _gateway(sim)
    informer = _pod_events(gw, bookmarks=False)  # nothing moves its version forward
    try:
        informer.start()
        await until(informer.synced.is_set, "the first list")
        _unrelated_writes(sim)
        sim.api.store.compact()
        await until(lambda: informer.lists == 2, "a relist after 410 Gone")
        record(sim.api, _a_pod(sim), "Killing", "Stopping container", component="kubelet")
        await until(lambda: any(e["reason"] == "Killing" for e in informer.items()), "the event")
    finally:
        informer.stop()
        gw.close()
    assert any(
        r[0] == "GET" and r[1] == "/api/v1/events" and "watch=true" in r[2] for r in sim.requests
    )


async def test_a_view_built_from_the_informer_shows_the_events_the_lists_show(
    make_kubesim: Callable[..., Awaitable[KubeSim]],
) -> None:
    sim = await make_kubesim("seed")
    listing = _gateway(sim)
    watching = Gateway.from_settings(listing.settings, informers=True)
    watching.events_watch_s = 1
    try:
        informer = watching.pod_events()
        assert informer is not None
        await until(informer.synced.is_set, "the first list")
        for pod in list(sim.api.store.list("pods"))[:5]:
            record(sim.api, pod, "Unhealthy", "Liveness probe failed", component="kubelet")
        expected = {e["metadata"]["name"] for e in sim.api.store.list("events")}
        await until(lambda: expected <= _names(informer) | _node_event_names(sim), "the events")
        sim.requests.clear()
        held = await watching.get_cluster_view("gpu-node-01")
        namespaced_lists = [r for r in sim.requests if "/namespaces/" in r[1] and "/events" in r[1]]
        listed = await listing.get_cluster_view("gpu-node-01")
    finally:
        watching.close()
        listing.close()
    assert namespaced_lists == []
    assert any(e.reason == "Unhealthy" for e in listed.events)
    assert held.events == listed.events


def _node_event_names(sim: KubeSim) -> set[str]:
    return {
        e["metadata"]["name"]
        for e in sim.api.store.list("events")
        if e["involvedObject"].get("kind") != "Pod"
    }


def test_the_informer_hands_out_the_events_of_the_namespaces_asked_for_only() -> None:
    informer = Informer(None, "/api/v1/events", slim=lambda e: e)  # type: ignore[arg-type]

    def event(ns: str, name: str, kind: str = "ADDED") -> dict[str, object]:
        meta = {"namespace": ns, "name": name, "resourceVersion": "1"}
        return {"type": kind, "object": {"metadata": meta}}

    for ns, name in (("a", "e1"), ("a", "e2"), ("b", "e3"), ("c", "e4")):
        informer._apply(event(ns, name), "0")
    informer._apply(event("a", "e1", "DELETED"), "0")
    informer._apply(event("c", "e4", "DELETED"), "0")

    def names(objs: list[dict[str, Any]]) -> list[str]:
        return sorted(o["metadata"]["name"] for o in objs)

    assert names(informer.items_in(["a"])) == ["e2"]
    assert names(informer.items_in(["a", "b", "zz"])) == ["e2", "e3"]
    assert names(informer.items()) == ["e2", "e3"]
    assert informer.items_in(["c"]) == []


async def test_stopping_an_informer_ends_its_watch_at_once_not_when_the_watch_times_out(
    make_kubesim: Callable[..., Awaitable[KubeSim]],
) -> None:
    sim = await make_kubesim("seed")
    sim.bookmark_s = 3600.0  # the server writes nothing to the watch meanwhile
    gw = _gateway(sim)
    informer = _pod_events(gw, watch_s=300)  # a watch that would run 300 s
    try:
        informer.start()
        await until(informer.synced.is_set, "the first list")
        await until(lambda: sim.api.store.open_watches() == 1, "the watch to open")
        informer.stop()
        await until(lambda: not informer.running, "the informer's thread to end")
        assert informer.failures == 0  # ended as asked, not failed
    finally:
        informer.stop()
        gw.close()


async def test_a_watch_whose_interrupt_was_set_before_it_opened_ends_as_it_opens(
    make_kubesim: Callable[..., Awaitable[KubeSim]],
) -> None:
    sim = await make_kubesim("seed")
    gw = _gateway(sim)
    interrupt = WatchInterrupt()
    interrupt.set()
    query = [("watch", "true"), ("resourceVersion", "0"), ("timeoutSeconds", 300)]
    try:
        lines = await asyncio.wait_for(
            asyncio.to_thread(
                lambda: list(
                    gw.transport.watch_lines(
                        "/api/v1/nodes", query=query, timeout_s=330, interrupt=interrupt
                    )
                )
            ),
            WAIT_S,
        )
        # whatever arrived before the shut socket was read, and then the end, not a failure
        assert all('"type":"ADDED"' in line.replace(" ", "") for line in lines)
    finally:
        gw.close()
