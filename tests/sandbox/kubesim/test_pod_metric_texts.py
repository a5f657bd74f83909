"""The pod metrics list joins items kept since their inputs last changed
(``metrics.PodMetricTexts``), and answers byte for byte what working every item out afresh
answers: after a pod is written, after a ReplicaSet moves its pods to another workload, after
the stand-in's scenario workloads change, on a moved clock, and for a pod written while a
list is sent. A pod written or removed takes its kept item with it (``Store.derived``), also
when that happens while a list is sent.

Like tests/sandbox/kubesim/test_encoded_once.py these stand-ins run without the suite's
guard (``KUBESIM_CHECK_ENCODED``) where a test looks for stale bytes, which the guard would
turn into an error; one test shows the guard catching what no write announced.
"""

from __future__ import annotations

import json
import re
import urllib.request
from collections.abc import Awaitable, Callable
from datetime import timedelta
from typing import Any

import aiohttp
import pytest

from gpunode_sandbox.kubesim import KubeSim, Scenario
from gpunode_sandbox.kubesim import scenarios as sc
from gpunode_sandbox.kubesim.access import ADMIN_TOKEN
from gpunode_sandbox.kubesim.app import PIECE_ITEMS
from gpunode_sandbox.kubesim.encoding import encode_bytes, list_body
from gpunode_sandbox.kubesim.metrics import PodMetricTexts, running_rows
from gpunode_sandbox.kubesim.process import separate_process
from gpunode_sandbox.kubesim.resources import STORED, find
from gpunode_sandbox.kubesim.stamps import T0, ts
from gpunode_sandbox.kubesim.store import ChangedInPlaceError, Store, clone

Obj = dict[str, Any]
METRICS = find("metrics.k8s.io", "v1beta1", "pods")
NODE: Obj = {
    "name": "n1",
    "capacity": {"cpu": "16", "memory": "64Gi"},
    "allocatable": {"cpu": "16", "memory": "60Gi"},
}


def _deployment(name: str, anon: str) -> Obj:
    return {
        "kind": "Deployment",
        "name": name,
        "nodes": ["n1"],
        "containers": [{"name": "c", "usage": {"anon": anon, "file": "1Gi"}}],
    }


def _scenario() -> Scenario:
    workloads = [_deployment("small", "1Gi"), _deployment("big", "9Gi")]
    return Scenario.model_validate({"name": "t", "nodes": [NODE], "workloads": workloads})


def _sim(scenario: Scenario | None = None, **kw: Any) -> KubeSim:
    """A stand-in, not started (the metrics list is made as a request makes it), unguarded."""
    sim = KubeSim(scenario or _scenario(), **kw)
    sim.api.store.check_encoded = False
    return sim


def _served(sim: KubeSim, size: int = PIECE_ITEMS) -> bytes:
    """The pod metrics list as the stand-in sends it (its kept items joined)."""
    head, _, pieces = sim.pod_metrics_pieces(None, size)
    return list_body(head, [item for piece in pieces for item in piece])


def _afresh(sim: KubeSim) -> bytes:
    """The pod metrics list with every item worked out now (as before items were kept)."""
    assert METRICS is not None
    return encode_bytes(sim.metrics(METRICS, None, None))


def _memory(body: bytes, pod: Obj) -> str:
    """The memory ``body`` (a metrics list) gives ``pod``'s container."""
    items = json.loads(body)["items"]
    item = next(i for i in items if i["metadata"]["name"] == pod["metadata"]["name"])
    return str(item["containers"][0]["usage"]["memory"])


def _pod_named(sim: KubeSim, prefix: str) -> Obj:
    return next(p for p in sim.api.store.list("pods") if p["metadata"]["name"].startswith(prefix))


def test_a_pod_written_shows_in_the_next_metrics_list() -> None:
    sim = _sim()
    before = _served(sim)
    pod = clone(_pod_named(sim, "small-"))
    pod["metadata"]["labels"]["tier"] = "relabelled"
    sim.api.store.put("pods", pod)
    after = _served(sim)
    assert after == _afresh(sim) != before
    assert b'"tier":"relabelled"' in after


def test_a_replicaset_moved_to_another_deployment_moves_its_pods_figures() -> None:
    sim = _sim()
    pod = _pod_named(sim, "small-")
    before = _served(sim)
    rs_name = next(r["name"] for r in pod["metadata"]["ownerReferences"] if r["controller"])
    rs = clone(sim.api.store.get("replicasets", "default", rs_name))
    assert rs is not None
    rs["metadata"]["ownerReferences"][0]["name"] = "big"  # now the big Deployment's
    sim.api.store.put("replicasets", rs)
    after = _served(sim)
    assert after == _afresh(sim) != before
    big = _pod_named(sim, "big-")
    assert _memory(after, pod) == _memory(after, big) != _memory(before, pod)


def _with_anon(c: sc.Container, anon: str) -> sc.Container:
    return c.model_copy(update={"usage": c.usage.model_copy(update={"anon": anon})})


def test_a_stand_in_given_other_workloads_serves_their_figures() -> None:
    """No test moves a live stand-in's scenario today (each builds its own, or a
    ``model_copy`` that shares the workloads list); a scenario replaced by a copy with other
    workloads is the one way they could change, and it is served as it is."""
    sim = _sim()
    before = _served(sim)
    bigger = [
        w.model_copy(update={"containers": [_with_anon(c, "20Gi") for c in w.containers]})
        for w in sim.scenario.workloads
    ]
    sim.scenario = sim.scenario.model_copy(update={"workloads": bigger})
    after = _served(sim)
    assert after == _afresh(sim) != before


def test_a_shared_workloads_list_serves_each_stand_in_its_own_pods() -> None:
    """``model_copy`` (test_jobs's faults) keeps the workloads list: two stand-ins then share
    it, and each serves its own pods."""
    first = _sim()
    second = _sim(first.scenario.model_copy(update={"faults": []}))
    assert second.scenario.workloads is first.scenario.workloads
    pod = clone(_pod_named(second, "big-"))
    pod["metadata"]["labels"]["only"] = "second"
    second.api.store.put("pods", pod)
    for sim in (first, second, first, second):
        assert _served(sim) == _afresh(sim)
    assert _served(first) != _served(second)


def test_a_moved_clock_is_served_shifted_and_kept_only_for_its_shift() -> None:
    sim = _sim(clock_from_start=True)
    assert sim.clock_shift
    first = _served(sim)
    assert first == _afresh(sim) == _served(sim)
    sim.clock_shift += timedelta(days=3)
    assert _served(sim) == _afresh(sim) != first


def test_a_pod_removed_while_its_list_is_sent_leaves_no_item_behind() -> None:
    sim = _sim()
    texts, rows, stamp = PodMetricTexts(sim), running_rows(sim, None), ts(T0)
    assert len(rows) == 2
    texts.items(rows[:1], stamp)
    sim.api.store.remove("pods", *rows[1][0])
    assert len(texts.items(rows[1:], stamp)) == 1  # the list goes on with the pod it read
    assert len(texts) == 1


def test_a_list_begun_before_a_write_lists_the_pod_it_read() -> None:
    """One list reads its pods when it begins and is sent piece by piece; a pod written
    meanwhile and listed whole by a second list is, in the first, still the pod it read."""
    sim = _sim()
    _, _, pieces = sim.pod_metrics_pieces(None, 1)
    listed_before = _afresh(sim)
    pod = clone(_pod_named(sim, "small-"))
    pod["metadata"]["labels"]["tier"] = "later"
    sim.api.store.put("pods", pod)
    assert _served(sim) == _afresh(sim) != listed_before  # the second list, all of it
    head = json.loads(listed_before)
    head.pop("items")
    assert list_body(head, [item for piece in pieces for item in piece]) == listed_before


def test_the_store_drops_a_derived_entry_when_its_key_is_written_or_removed() -> None:
    store = Store()
    derived = store.derived("pods")
    pod = store.put("pods", {"metadata": {"name": "a", "namespace": "ns"}})
    derived[("ns", "a")] = "made from the first version"
    store.put("configmaps", {"metadata": {"name": "a", "namespace": "ns"}})
    assert ("ns", "a") in derived  # another plural's write
    store.put("pods", clone(pod))
    assert ("ns", "a") not in derived
    derived[("ns", "a")] = "made from the second"
    store.remove("pods", "ns", "a")
    assert derived == {}


async def test_a_fleets_metrics_list_is_the_same_bytes_sent_again_and_again(
    make_kubesim: Callable[..., Awaitable[KubeSim]],
) -> None:
    sim = await make_kubesim(Scenario.synthetic_fleet(nodes=20, pods=2 * PIECE_ITEMS + 300))
    sim.api.store.check_encoded = False
    afresh = _afresh(sim)
    headers = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
    async with aiohttp.ClientSession() as session:
        for _ in range(3):
            path = sim.url + "/apis/metrics.k8s.io/v1beta1/pods"
            async with session.get(path, headers=headers) as r:
                assert r.headers.get("Transfer-Encoding") == "chunked"
                assert await r.read() == afresh


def test_the_guard_catches_an_input_that_changed_without_a_write() -> None:
    sim = _sim()
    sim.api.store.check_encoded = True
    _served(sim)
    _pod_named(sim, "small-")["metadata"]["labels"]["tier"] = "in place"
    with pytest.raises(ChangedInPlaceError, match="pod metrics of default/small-"):
        _served(sim)


def test_a_warmed_stand_in_serves_what_it_made_before_any_request() -> None:
    """``KubeSim.warm`` (``process --warm``) keeps every stored object's encoding and every
    running pod's metrics item: a pod changed in place afterwards (no write to tell) is
    caught by the guard on its first use, which only a kept item or encoding can be."""
    sim = _sim()
    sim.warm()
    assert _served(sim) == _afresh(sim)
    sim.api.store.check_encoded = True
    pod = _pod_named(sim, "small-")
    pod["metadata"]["labels"]["tier"] = "in place"
    with pytest.raises(ChangedInPlaceError, match="pod metrics of default/small-"):
        _served(sim)
    key = ("default", pod["metadata"]["name"])
    with pytest.raises(ChangedInPlaceError, match="changed in place"):
        sim.encoded(STORED["pods"], key, pod)


def _read(url: str, path: str) -> bytes:
    """``path``'s answer, but for the stamps of the moment the objects were made (the pods a
    Deployment's ReplicaSet makes are stamped from the real clock)."""
    request = urllib.request.Request(url + path, headers={"Authorization": f"Bearer {ADMIN_TOKEN}"})
    with urllib.request.urlopen(request, timeout=30) as answer:
        return re.sub(rb'"creationTimestamp":"[^"]*"', b"", answer.read())


def test_a_warm_stand_in_process_answers_as_a_cold_one() -> None:
    """``separate_process`` starts warm by default; its answers are the cold one's bytes (and
    the child inherits the suite's guard, so each kept answer is checked as it is used)."""
    paths = ("/api/v1/pods?limit=5", "/api/v1/pods", "/apis/metrics.k8s.io/v1beta1/pods")
    answers = []
    for warm in (False, True):
        with separate_process(scenario="seed", warm=warm) as (url, _):
            answers.append([_read(url, path) for path in paths])
    assert answers[0] == answers[1]
    assert b'"kind":"PodMetricsList"' in answers[1][2]
