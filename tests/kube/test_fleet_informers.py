"""The fleet (``top``'s rows, the plans' "where can it go") summed from the pods and nodes
informers' memory is the fleet the lists read, follows the watch without listing again,
relists after 410 Gone, and falls back to the lists when the informers are not synced. The
stand-in serves the lists and watches over HTTP, as an API server does."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

from bot.config import KubeSettings
from bot.kube.cutting import (
    FleetShare,
    PodRecord,
    node_record,
    node_records_page,
    pod_record,
    pod_records_page,
)
from bot.kube.decoding import PageDecoder
from bot.kube.gateway import Gateway
from bot.kube.informing import Informer
from bot.kube.tallying import FleetTally, NodeShare
from gpunode_sandbox.kubesim import KubeSim
from gpunode_sandbox.kubesim import scenarios as sc
from gpunode_sandbox.kubesim.access import BOT_TOKEN
from tests.traced import held_by, peak_of

Obj = dict[str, Any]
WAIT_S = 60.0  # generous: the machine may be busy; nothing here is timed


async def until(check: Callable[[], bool], what: str) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + WAIT_S
    while not check():
        assert loop.time() < deadline, f"gave up waiting: {what}"
        await asyncio.sleep(0.05)


def _settings(sim: KubeSim) -> KubeSettings:
    return KubeSettings(
        mode="server", server=sim.url, token=BOT_TOKEN, verify_tls=False, fleet_cache_s=0
    )


def _same(a: FleetTally, b: FleetTally) -> None:
    assert a.pods == b.pods > 0
    assert a.where == b.where
    assert a.anti == b.anti
    assert a.room() == b.room()
    assert a.loads(None) == b.loads(None)


def _pod_lists(sim: KubeSim) -> list[tuple[str, str, str]]:
    return [r for r in sim.requests if r[1] == "/api/v1/pods" and "watch=true" not in r[2]]


async def _informed(sim: KubeSim, watch_s: int = 1) -> Gateway:
    gw = Gateway.from_settings(_settings(sim), informers=True)
    gw.fleet_watch_s = watch_s
    return gw


async def test_the_fleet_summed_from_the_informers_is_the_fleet_the_lists_read(
    make_kubesim: Callable[..., Awaitable[KubeSim]],
) -> None:
    sim = await make_kubesim("seed")
    listing = Gateway.from_settings(_settings(sim))
    watching = await _informed(sim)
    try:
        listed = await listing.fleet()
        listed_loads = await listing.gpu_node_loads()
        first = await watching.fleet()
        sim.requests.clear()
        again = await watching.fleet()
        loads = await watching.gpu_node_loads()
    finally:
        watching.close()
        listing.close()
    _same(listed, first)
    assert again is first  # nothing changed: the sum is reused
    assert loads == listed_loads
    assert _pod_lists(sim) == []
    assert not [r for r in sim.requests if r[1] == "/api/v1/nodes" and "watch" not in r[2]]


async def test_a_watched_change_reaches_the_fleet_without_another_list(
    make_kubesim: Callable[..., Awaitable[KubeSim]],
) -> None:
    sim = await make_kubesim(sc.Scenario.synthetic_fleet(12, 240))
    listing = Gateway.from_settings(_settings(sim))
    watching = await _informed(sim)
    try:
        before = await watching.fleet()
        informers = watching.fleet_informers()
        assert informers is not None
        pods, nodes = informers
        gone = next(iter(sim.api.store.list("pods")))
        sim.api.store.remove("pods", gone["metadata"]["namespace"], gone["metadata"]["name"])
        node = dict(sim.api.store.get("nodes", None, "gpu-node-0001") or {})
        node["spec"] = {**node["spec"], "unschedulable": True}
        sim.api.store.put("nodes", node)
        await until(lambda: pods.generation > 1 and nodes.generation > 1, "the watch events")
        after = await watching.fleet()
        listed = await listing.fleet()
    finally:
        watching.close()
        listing.close()
    assert after.pods == before.pods - 1
    assert next(r for r in after.room() if r.name == "gpu-node-0001").unschedulable
    _same(listed, after)
    assert (pods.lists, nodes.lists) == (1, 1)


async def test_a_watch_from_a_compacted_version_relists_the_pods_and_they_stay_right(
    make_kubesim: Callable[..., Awaitable[KubeSim]],
) -> None:
    sim = await make_kubesim("seed")
    gw = Gateway.from_settings(_settings(sim))
    pods: Informer[PodRecord] = Informer(
        gw.transport,
        "/api/v1/pods",
        slim=pod_record,
        pages=pod_records_page,
        decoder=PageDecoder(use_process=False),
        share=FleetShare().pod,
        watch_s=1,
        bookmarks=False,  # nothing moves its version forward: the next watch is stale
    )
    try:
        pods.start()
        await until(pods.synced.is_set, "the first list")
        for i in range(3):  # writes the pods watch never sees
            sim.api.store.put("configmaps", {"metadata": {"name": f"noise-{i}", "namespace": "x"}})
        sim.api.store.compact()
        await until(lambda: pods.lists == 2, "a relist after 410 Gone")
        gone = next(iter(sim.api.store.list("pods")))
        sim.api.store.remove("pods", gone["metadata"]["namespace"], gone["metadata"]["name"])
        key = (gone["metadata"]["namespace"], gone["metadata"]["name"])
        await until(lambda: key not in {(ns, name) for ns, name, _ in pods.keyed()}, "the delete")
        held = {(ns, name): r for ns, name, r in pods.keyed()}
    finally:
        pods.stop()
        gw.close()
    stored = {
        (p["metadata"]["namespace"], p["metadata"]["name"]) for p in sim.api.store.list("pods")
    }
    assert set(held) == stored
    assert all(held[k] == pod_record(sim.api.store.get("pods", *k) or {}) for k in stored)


async def test_a_fleet_read_lists_when_the_informers_are_not_synced(
    make_kubesim: Callable[..., Awaitable[KubeSim]],
) -> None:
    sim = await make_kubesim("seed")
    watching = await _informed(sim)
    try:
        informed = await watching.fleet()
        for informer in watching.fleet_informers() or ():
            informer.stop()  # as after a failed watch: not synced until listed again
        sim.requests.clear()
        listed = await watching.fleet()
    finally:
        watching.close()
    _same(informed, listed)
    assert len(_pod_lists(sim)) >= 1


async def test_after_the_bot_cordons_a_node_the_next_fleet_shows_it_cordoned(
    make_kubesim: Callable[..., Awaitable[KubeSim]],
) -> None:
    sim = await make_kubesim("seed")
    watching = await _informed(sim)
    try:
        await watching.fleet()
        await watching.cordon("gpu-node-01", dry_run=False)
        after = await watching.fleet()
    finally:
        watching.close()
    assert next(r for r in after.room() if r.name == "gpu-node-01").unschedulable


def test_a_pod_costs_the_informer_a_few_hundred_bytes() -> None:
    """tracemalloc over the records of 3,000 pods as the informer keeps them (cut from a
    stand-in's list page, parts shared): the figure behind the bot's RSS at 150,000 pods."""
    import json

    fleet = sc.Scenario.synthetic_fleet(100, 3000)
    sim = KubeSim(fleet)
    body = json.dumps(
        {"metadata": {"resourceVersion": "1"}, "items": sim.api.store.list("pods")}
    ).encode()
    share = FleetShare()
    held, grown = held_by(
        lambda: {(ns, name): share.pod(r) for ns, name, r in pod_records_page(body).items}
    )
    assert len(held) == 3000
    per_pod = grown / len(held)
    print(f"informer bytes per pod: {per_pod:.0f}")
    assert per_pod < 600, per_pod


def test_the_pods_records_drop_out_of_the_garbage_collectors_walk() -> None:
    """A full collection walks every object the collector tracks, holding the interpreter
    lock throughout, while the event loop waits for it. The records the informer keeps, and
    the per-namespace dicts holding them, are tuples and dicts of atoms, which the collector
    stops tracking the first time it sees them: 150,000 pods add nothing to its walk."""
    import gc
    import json

    fleet = sc.Scenario.synthetic_fleet(20, 600)
    sim = KubeSim(fleet)
    body = json.dumps(
        {"metadata": {"resourceVersion": "1"}, "items": sim.api.store.list("pods")}
    ).encode()
    share = FleetShare()
    held: dict[str, dict[str, PodRecord]] = {}
    for ns, name, record in pod_records_page(body).items:
        held.setdefault(ns, {})[name] = share.pod(record)
    gc.collect()
    records = [r for names in held.values() for r in names.values()]
    assert len(records) == 600
    assert not any(gc.is_tracked(r) for r in records if r[3] is None)
    assert not any(gc.is_tracked(names) for names in held.values())
    assert sum(r[0] != "" for r in records) > 0


def test_a_replica_sets_pods_share_one_labels_text_and_one_owner_text() -> None:
    """What the plans' selections read of each pod (``bot.kube.selections``) costs a pointer
    a pod: equal labels and controller references are one string, across list pages too."""
    import json

    fleet = sc.Scenario.synthetic_fleet(20, 1200)
    sim = KubeSim(fleet)
    items = sim.api.store.list("pods")
    share = FleetShare()
    records = [
        share.pod(r)
        for half in (items[:600], items[600:])  # two pages, cut apart as the decoder does
        for _, _, r in pod_records_page(
            json.dumps({"metadata": {"resourceVersion": "1"}, "items": half}).encode()
        ).items
    ]
    owners = {r[5] for r in records}
    assert len(records) == 1200 and 1 < len(owners) < 20
    for owner in owners:
        mine = [r for r in records if r[5] == owner]
        assert len({id(r[4]) for r in mine}) == 1  # one labels string
        assert len({id(r[5]) for r in mine}) == 1  # one owner string
        assert json.loads(owner)[1] == "ReplicaSet"


async def test_a_primed_gateway_lists_the_fleet_before_anyone_asks_and_its_first_top_lists_nothing(
    make_kubesim: Callable[..., Awaitable[KubeSim]],
) -> None:
    sim = await make_kubesim("seed")
    listing = Gateway.from_settings(_settings(sim))
    primed = await _informed(sim, watch_s=30)
    try:
        primed.prime()  # returns at once: the lists run on the informers' threads

        def watching(path: str) -> bool:  # an informer watches once its list is done
            return any(r[1] == path and "watch=true" in r[2] for r in sim.requests)

        await until(lambda: watching("/api/v1/pods") and watching("/api/v1/nodes"), "lists")
        sim.requests.clear()
        first_loads = await primed.gpu_node_loads()
        fleet = await primed.fleet()
        asked = list(sim.requests)  # the primed gateway's reads, before the listing one's
        listed = await listing.fleet()
        listed_loads = await listing.gpu_node_loads()
    finally:
        primed.close()
        listing.close()
    assert first_loads == listed_loads
    _same(listed, fleet)
    assert [
        r for r in asked if r[1] in ("/api/v1/pods", "/api/v1/nodes") and "watch" not in r[2]
    ] == []


async def test_priming_a_gateway_that_keeps_no_informers_reads_nothing(
    make_kubesim: Callable[..., Awaitable[KubeSim]],
) -> None:
    sim = await make_kubesim("seed")
    one_shot = Gateway.from_settings(_settings(sim))  # the terminal's: no informers
    sim.requests.clear()
    try:
        one_shot.prime()
        await asyncio.sleep(0.5)
    finally:
        one_shot.close()
    assert one_shot.fleet_informers() is None
    assert sim.requests == []


def _node_records(sim: KubeSim, pages: int) -> list[Obj]:
    """The nodes' records as the decoder hands them over: cut a page at a time, each page
    pickled across (every string and dict a copy of its own)."""
    import json
    import pickle

    items = sim.api.store.list("nodes")
    size = -(-len(items) // pages)
    return [
        record
        for at in range(0, len(items), size)
        for _, _, record in pickle.loads(
            pickle.dumps(
                node_records_page(
                    json.dumps(
                        {"metadata": {"resourceVersion": "1"}, "items": items[at : at + size]}
                    ).encode()
                )
            )
        ).items
    ]


def test_a_node_costs_the_informer_under_two_kib() -> None:
    """tracemalloc over 400 nodes' records as the nodes informer keeps them (cut in four
    pages, parts shared): 5,000 nodes held ~23 MiB of the bot's process unshared."""
    records = _node_records(KubeSim(sc.Scenario.synthetic_fleet(400, 400)), pages=4)
    share = NodeShare()
    held, grown = held_by(lambda: [share.node(r) for r in records])
    records.clear()  # what the decoder's copies held is freed once the page is merged
    per_node = grown / len(held)
    print(f"informer bytes per node: {per_node:.0f}")
    assert len(held) == 400
    assert per_node < 2048, per_node


def test_a_node_pools_nodes_share_their_parts_and_keep_their_own_names_and_labels() -> None:
    records = _node_records(KubeSim(sc.Scenario.synthetic_fleet(40, 40)), pages=2)
    share = NodeShare()
    held = [share.node(r) for r in records]
    assert held == records, "sharing changes no value"
    gpu = [n for n in held if "nvidia.com/gpu" in n["status"]["allocatable"]]
    cpu = [n for n in held if n not in gpu]
    assert gpu and cpu
    for pool in (gpu, cpu):
        for part in ("allocatable", "capacity", "nodeInfo"):
            assert len({id(n["status"][part]) for n in pool}) == 1, part
    assert len({id(n["status"]["allocatable"]) for n in held}) == 2, "one per pool"
    assert len({id(n["metadata"]["labels"]) for n in held}) == len(held)
    reasons = {id(c["reason"]) for n in held for c in n["status"]["conditions"]}
    assert len(reasons) == len({c["reason"] for n in held for c in n["status"]["conditions"]})


async def test_the_nodes_informer_shares_a_pools_parts_watched_changes_included(
    make_kubesim: Callable[..., Awaitable[KubeSim]],
) -> None:
    sim = await make_kubesim(sc.Scenario.synthetic_fleet(12, 24))
    gw = await _informed(sim)
    try:
        informers = gw.fleet_informers()
        assert informers is not None
        nodes = informers[1]
        await gw.fleet()
        node = dict(sim.api.store.get("nodes", None, "gpu-node-0001") or {})
        node["spec"] = {**node["spec"], "unschedulable": True}
        sim.api.store.put("nodes", node)
        await until(lambda: nodes.generation > 1, "the watch event")
        held = nodes.items()
    finally:
        gw.close()
    gpu = [n for n in held if n["metadata"]["name"].startswith("gpu-")]
    assert len(gpu) == 3 and any(n["spec"]["unschedulable"] for n in gpu)
    assert len({id(n["status"]["allocatable"]) for n in gpu}) == 1
    assert len({id(n["status"]["allocatable"]) for n in held}) == 2


def _page_of(items: list[Obj], *, metadata_first: bool = True) -> bytes:
    import json

    meta = {"resourceVersion": "7", "continue": "next"}
    page = (
        {"metadata": meta, "items": items} if metadata_first else {"items": items, "metadata": meta}
    )
    return json.dumps(page).encode()


def test_a_pods_page_is_cut_in_steps_never_decoded_whole() -> None:
    """The decoder held a whole page's objects at once (~6 MiB for 500 pods), counted in the
    bot's process tree; cut a step at a time, under 2 MiB."""
    body = _page_of(KubeSim(sc.Scenario.synthetic_fleet(20, 500)).api.store.list("pods"))
    page, peak = peak_of(lambda: pod_records_page(body))
    assert len(page.items) == 500
    print(f"cutting a 500-pod page peaked at {peak / 2**20:.2f} MiB")
    assert peak < 2 * 2**20, peak


def test_a_page_cut_in_steps_is_the_page_cut_whole() -> None:
    import json

    sim = KubeSim(sc.Scenario.synthetic_fleet(20, 300))
    for kind, cut, whole in (
        ("pods", pod_records_page, pod_record),
        ("nodes", node_records_page, node_record),
    ):
        items = sim.api.store.list(kind)
        expected = [
            (o["metadata"].get("namespace") or "", o["metadata"]["name"], whole(o)) for o in items
        ]
        for first in (True, False):  # the API server writes metadata first; either way
            page = cut(_page_of(items, metadata_first=first))
            assert (page.token, page.resource_version) == ("next", "7")
            assert page.items == expected
    empty = pod_records_page(json.dumps({"metadata": {}, "items": None}).encode())
    assert (empty.token, empty.resource_version, empty.items) == (None, "", [])
    assert pod_records_page(b"").items == []


async def test_top_reads_the_pod_metrics_beside_the_fleets_lists_not_after_them(
    make_kubesim: Callable[..., Awaitable[KubeSim]],
) -> None:
    # the pods list answers late: the metrics list is asked for while it is held (read
    # after the fleet, as it was, it could only be asked for once the pods list had ended)
    sim = await make_kubesim("seed")
    timeline: list[str] = []
    apply = sim.faults.apply

    async def entered(method: str, path: str) -> Any:
        timeline.append(f"asked {path}")
        return await apply(method, path)

    sim.faults.apply = entered  # type: ignore[method-assign]  # the stand-in's own hook
    for informed in (False, True):
        gw = (await _informed(sim)) if informed else Gateway.from_settings(_settings(sim))
        gw.observe_api(lambda verb, resource, status: timeline.append(f"{verb} {resource}"))
        # 4 s: what a loaded machine may take to ask for discovery and then the metrics
        held = sim.faults.add("GET", r"^/api/v1/pods$", delay_s=4.0)
        timeline.clear()
        try:
            loads = await gw.gpu_node_loads()
        finally:
            gw.close()
        assert held.hits == 1
        assert loads and all(load.working_set_bytes is not None for load in loads)
        pods_answered = timeline.index("GET pods")  # the first request of pods to end
        metrics_asked = timeline.index("asked /apis/metrics.k8s.io/v1beta1/pods")
        assert metrics_asked < pods_answered, (informed, timeline)
