"""The stand-in encodes each stored object once per version, as the API server's watch cache
keeps its objects' serializations (``Store.encoded``): a list, a get and a watch event are
byte for byte what encoding the served objects afresh gives, a write (put, remove, a patch
over HTTP) shows in the next answer, and an answer that is computed (a PodDisruptionBudget's
status, stamps on a moved clock) is never served from a kept encoding.

These tests look at the answers themselves, so their stand-ins run without the suite's
in-place guard (``KUBESIM_CHECK_ENCODED``, tests/conftest.py): with it a stale answer would be
a 500 raised by the guard, not the stale bytes each test names.
"""

from __future__ import annotations

import asyncio
import itertools
import json
from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import quote

import aiohttp
import pytest
from aiohttp.test_utils import TestClient, TestServer
from hypothesis import given, settings
from hypothesis import strategies as st

from gpunode_sandbox.kubesim import KubeSim, Scenario, load_scenario
from gpunode_sandbox.kubesim.access import ADMIN_TOKEN
from gpunode_sandbox.kubesim.app import build_app
from gpunode_sandbox.kubesim.encoding import encode_bytes
from gpunode_sandbox.kubesim.resources import STORED
from gpunode_sandbox.kubesim.store import ChangedInPlaceError, Store, clone
from tests.conftest import kube_call

Obj = dict[str, Any]
AUTH = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
PODS = STORED["pods"]


async def _unguarded(make: Callable[..., Awaitable[KubeSim]], *args: Any, **kw: Any) -> KubeSim:
    sim = await make(*args, **kw)
    sim.api.store.check_encoded = False
    return sim


async def _raw(url: str, path: str) -> bytes:
    async with aiohttp.ClientSession() as http, http.get(url + path, headers=AUTH) as resp:
        assert resp.status == 200, await resp.text()
        return await resp.read()


def _afresh(sim: KubeSim, body: bytes, plural: str) -> bytes:
    """``body`` (a list answer) as encoding its items' stored objects afresh answers it: the
    list answer as it was made before encodings were kept."""
    listed = json.loads(body)
    res, store = STORED[plural], sim.api.store
    items = []
    for item in listed.pop("items"):
        meta = item["metadata"]
        stored = store.get(plural, meta.get("namespace"), meta["name"])
        assert stored is not None, f"listed but not stored: {meta}"
        items.append(sim.served(res, stored))
    return encode_bytes({**listed, "items": items})


def _pod(sim: KubeSim) -> Obj:
    return next(p for p in sim.api.store.list("pods") if p["spec"].get("nodeName"))


def _annotated(obj: Obj, value: str) -> Obj:
    annotations = {**(obj["metadata"].get("annotations") or {}), "probe": value}
    return {**obj, "metadata": {**obj["metadata"], "annotations": annotations}}


def _listed(body: bytes, name: str) -> Obj:
    return next(i for i in json.loads(body)["items"] if i["metadata"]["name"] == name)


def _probe(obj: Obj) -> str | None:
    return (obj["metadata"].get("annotations") or {}).get("probe")


# ---- a write shows in the next answer ----------------------------------------------------------
async def test_a_list_after_a_put_shows_the_new_version(
    make_kubesim: Callable[..., Awaitable[KubeSim]],
) -> None:
    sim = await _unguarded(make_kubesim, "seed")
    pod = _pod(sim)
    await _raw(sim.url, "/api/v1/pods")
    await _raw(sim.url, "/api/v1/pods")  # the kept encodings used once
    sim.api.store.put("pods", _annotated(pod, "after"))
    body = await _raw(sim.url, "/api/v1/pods")
    assert _probe(_listed(body, pod["metadata"]["name"])) == "after"
    assert body == _afresh(sim, body, "pods")


async def test_a_list_after_a_patch_over_http_shows_the_patch(
    make_kubesim: Callable[..., Awaitable[KubeSim]],
) -> None:
    sim = await _unguarded(make_kubesim, "seed")
    ns, name = _pod(sim)["metadata"]["namespace"], _pod(sim)["metadata"]["name"]
    await _raw(sim.url, f"/api/v1/namespaces/{ns}/pods")
    status, _ = await kube_call(
        sim.url,
        "PATCH",
        f"/api/v1/namespaces/{ns}/pods/{name}",
        body={"metadata": {"annotations": {"probe": "patched"}}},
        content_type="application/merge-patch+json",
    )
    assert status == 200
    body = await _raw(sim.url, f"/api/v1/namespaces/{ns}/pods")
    assert _probe(_listed(body, name)) == "patched"
    assert body == _afresh(sim, body, "pods")
    one = await _raw(sim.url, f"/api/v1/namespaces/{ns}/pods/{name}")
    assert _probe(json.loads(one)) == "patched"


async def test_an_object_deleted_and_created_again_is_listed_as_created(
    make_kubesim: Callable[..., Awaitable[KubeSim]],
) -> None:
    sim = await _unguarded(make_kubesim, "seed")
    path = "/api/v1/namespaces/default/configmaps"

    def config(value: str) -> Obj:
        return {"metadata": {"name": "probe"}, "data": {"value": value}}

    assert (await kube_call(sim.url, "POST", path, body=config("first")))[0] == 201
    assert _listed(await _raw(sim.url, path), "probe")["data"] == {"value": "first"}
    assert (await kube_call(sim.url, "DELETE", f"{path}/probe"))[0] == 200
    assert (await kube_call(sim.url, "POST", path, body=config("again")))[0] == 201
    body = await _raw(sim.url, path)
    assert _listed(body, "probe")["data"] == {"value": "again"}
    assert body == _afresh(sim, body, "configmaps")


async def test_a_watch_event_after_a_put_carries_the_new_version(
    make_kubesim: Callable[..., Awaitable[KubeSim]],
) -> None:
    sim = await _unguarded(make_kubesim, "seed")
    pod = _pod(sim)
    ns, name = pod["metadata"]["namespace"], pod["metadata"]["name"]
    listed = json.loads(await _raw(sim.url, f"/api/v1/namespaces/{ns}/pods"))
    stored = sim.api.store.put("pods", _annotated(pod, "watched"))
    path = (
        f"/api/v1/namespaces/{ns}/pods?watch=true&timeoutSeconds=5"
        f"&resourceVersion={listed['metadata']['resourceVersion']}"
    )
    async with aiohttp.ClientSession() as http, http.get(sim.url + path, headers=AUTH) as resp:
        line = await asyncio.wait_for(resp.content.readline(), 5)
    assert line == encode_bytes({"type": "MODIFIED", "object": stored}) + b"\n"
    assert _probe(json.loads(line)["object"]) == "watched"
    assert json.loads(line)["object"]["metadata"]["name"] == name


async def test_every_page_of_a_fleet_is_its_stored_objects_encoded_afresh(
    make_kubesim: Callable[..., Awaitable[KubeSim]],
) -> None:
    sim = await _unguarded(make_kubesim, Scenario.synthetic_fleet(nodes=12, pods=230))
    for plural, path in [("pods", "/api/v1/pods"), ("nodes", "/api/v1/nodes")]:
        for _ in range(2):  # encoded, then from the kept encodings
            token, pages = "", 0
            while True:
                query = f"?limit=40&continue={quote(token)}" if token else "?limit=40"
                body = await _raw(sim.url, path + query)
                assert body == _afresh(sim, body, plural)
                pages += 1
                token = json.loads(body)["metadata"].get("continue") or ""
                if not token:
                    break
            assert pages > 1 or plural == "nodes"


# ---- what is computed is computed each time ----------------------------------------------------
async def test_a_budgets_status_follows_its_pods_between_lists(
    make_kubesim: Callable[..., Awaitable[KubeSim]],
) -> None:
    """A PodDisruptionBudget's status is worked out from the pods as they are: listed twice,
    then its pod removed (the budget itself not written), it is listed with the pod gone."""
    sim = await _unguarded(make_kubesim, "seed")
    path = "/apis/policy/v1/poddisruptionbudgets"
    for _ in range(2):
        budget = _listed(await _raw(sim.url, path), "jupyter-alice")
        assert budget["status"]["currentHealthy"] == 1
    sim.api.store.remove("pods", "research", "jupyter-alice")
    body = await _raw(sim.url, path)
    assert _listed(body, "jupyter-alice")["status"]["currentHealthy"] == 0
    assert body == _afresh(sim, body, "poddisruptionbudgets")
    one = await _raw(
        sim.url, "/apis/policy/v1/namespaces/research/poddisruptionbudgets/jupyter-alice"
    )
    assert json.loads(one)["status"]["currentHealthy"] == 0


async def test_a_moved_clock_shifts_every_answer_from_the_stored_stamps(
    make_kubesim: Callable[..., Awaitable[KubeSim]],
) -> None:
    """On a moved clock (``clock_from_start``) a list, a get and a list after a write each
    show the stamps moved from the stored ones, never the stored ones themselves."""
    sim = await _unguarded(make_kubesim, "seed", clock_from_start=True)
    assert sim.clock_shift
    event = next(e for e in sim.api.store.list("events") if e.get("lastTimestamp"))
    ns, name = event["metadata"]["namespace"], event["metadata"]["name"]
    path = f"/api/v1/namespaces/{ns}/events"
    for _ in range(2):
        body = await _raw(sim.url, path)
        assert _listed(body, name) == sim.get("events", ns, name)
        assert _listed(body, name)["lastTimestamp"] != event["lastTimestamp"]
    sim.api.store.put("events", {**event, "message": "written"})
    body = await _raw(sim.url, path)
    assert _listed(body, name) == sim.get("events", ns, name)
    assert _listed(body, name)["message"] == "written"
    assert _listed(body, name)["lastTimestamp"] != event["lastTimestamp"]
    assert body == _afresh(sim, body, "events")
    one = json.loads(await _raw(sim.url, f"{path}/{name}"))
    assert one == sim.get("events", ns, name) and one["lastTimestamp"] != event["lastTimestamp"]


# ---- a varied fleet: the answers' bytes are the bytes encoded afresh --------------------------
JSONISH = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=10,
)
NAMES_USED = ["a", "b", "c"]
NAMES = st.sampled_from(NAMES_USED)
OPS = st.lists(
    st.one_of(
        st.tuples(
            st.just("put"),
            NAMES,
            st.dictionaries(st.text(max_size=8), st.text(), max_size=3),
            JSONISH,
        ),
        st.tuples(st.just("remove"), NAMES),
        st.tuples(st.just("list"), st.booleans(), st.integers(0, 4)),
        st.tuples(st.just("get"), NAMES),
    ),
    max_size=14,
)
_EXAMPLES = itertools.count()


def _varied_pod(ns: str, name: str, annotations: dict[str, str], extra: Any) -> Obj:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": ns, "annotations": annotations},
        "spec": {"containers": [{"name": "c", "image": "x"}], "extra": extra},
    }


async def _play(sim: KubeSim, ns: str, ops: list[tuple[Any, ...]]) -> None:
    store = sim.api.store
    async with TestClient(TestServer(build_app(sim))) as client:

        async def get(path: str) -> bytes:
            resp = await client.get(path, headers=AUTH)
            assert resp.status == 200, await resp.text()
            return await resp.read()

        async def listed_as_stored(path: str) -> None:
            for _ in range(2):  # encoded, then from the kept encodings
                body = await get(path)
                assert body == _afresh(sim, body, "pods")

        for op in ops:
            if op[0] == "put":
                store.put("pods", _varied_pod(ns, op[1], op[2], op[3]))
                await listed_as_stored(f"/api/v1/namespaces/{ns}/pods")
            elif op[0] == "remove":
                store.remove("pods", ns, op[1])
                await listed_as_stored(f"/api/v1/namespaces/{ns}/pods")
            elif op[0] == "get":
                stored = store.get("pods", ns, op[1])
                if stored is not None:
                    body = await get(f"/api/v1/namespaces/{ns}/pods/{op[1]}")
                    assert body == encode_bytes(sim.present(PODS, stored))
            else:
                path = ("/api/v1/pods" if op[1] else f"/api/v1/namespaces/{ns}/pods") + (
                    f"?limit={op[2]}" if op[2] else ""
                )
                await listed_as_stored(path)
    for name in NAMES_USED:  # the next example starts from the seed (and what it kept)
        store.remove("pods", ns, name)


@pytest.fixture(scope="module")
def varied_sim() -> KubeSim:
    sim = KubeSim(load_scenario("seed"))  # not started: nothing but the test writes
    sim.api.store.check_encoded = False
    return sim


@settings(max_examples=60)
@given(ops=OPS)
def test_a_varied_fleets_answers_are_their_objects_encoded_afresh(
    varied_sim: KubeSim, ops: list[tuple[Any, ...]]
) -> None:
    asyncio.run(_play(varied_sim, f"varied-{next(_EXAMPLES)}", ops))


# ---- the guard on the store's contract ---------------------------------------------------------
def _encodes(store: Store, obj: Obj) -> bytes:
    k = (obj["metadata"]["namespace"], obj["metadata"]["name"])
    return store.encoded("pods", k, obj, encode_bytes)


def test_an_object_changed_in_place_is_caught_when_its_encoding_is_used_again() -> None:
    store = Store()
    store.check_encoded = True
    stored = store.put("pods", _varied_pod("ns", "a", {}, 1))
    _encodes(store, stored)
    stored["spec"]["extra"] = 2  # what the contract forbids: a change without a put
    with pytest.raises(ChangedInPlaceError, match="pods ns/a was changed in place"):
        _encodes(store, stored)


def test_an_older_version_is_encoded_as_it_is_and_not_kept() -> None:
    """A watch event may carry a version that was written over since: it is encoded as that
    version, and the current one's kept encoding is left alone."""
    store = Store()
    old = store.put("pods", _varied_pod("ns", "a", {}, 1))
    new = store.put("pods", {**clone(old), "spec": {**old["spec"], "extra": 2}})
    assert _encodes(store, new) == encode_bytes(new)
    assert _encodes(store, old) == encode_bytes(old) != encode_bytes(new)
    assert _encodes(store, new) == encode_bytes(new)


def test_the_suite_runs_with_the_in_place_guard() -> None:
    assert Store().check_encoded
