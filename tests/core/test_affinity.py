"""Required pod affinity and anti-affinity decide where an evicted or restarted pod can go,
as kube-scheduler's InterPodAffinity filter decides it."""

from __future__ import annotations

from typing import Any

import pytest

from bot.core.model.cluster import RoomOnNode
from bot.core.model.workloads import (
    LabelSelector,
    PeerPod,
    PodAffinityTerm,
    PodScheduling,
    Requirement,
)
from bot.core.remedies.affinity import refusal, term_matches
from bot.core.remedies.destinations import landing_notes
from bot.core.remedies.planning import plan_tier1
from tests.core.analysis_builders import pod, view

GI = 1024**3
HOST = "kubernetes.io/hostname"
ZONE = "topology.kubernetes.io/zone"
NODES = {
    "a1": {HOST: "a1", ZONE: "a"},
    "a2": {HOST: "a2", ZONE: "a"},
    "b1": {HOST: "b1", ZONE: "b"},
    "bare": {HOST: "bare"},  # no zone label
}


def _term(key: str = ZONE, *, ns: list[str] | None = None, **labels: str) -> PodAffinityTerm:
    return PodAffinityTerm(
        selector=LabelSelector(match_labels=labels), namespaces=ns or ["ml"], topology_key=key
    )


def _peer(name: str, node: str, ns: str = "ml", **labels: str) -> PeerPod:
    return PeerPod(key=f"{ns}/{name}", namespace=ns, labels=labels, node=node)


def _why(
    node: str,
    *,
    labels: dict[str, str] | None = None,
    affinity: list[PodAffinityTerm] = (),  # type: ignore[assignment]
    anti: list[PodAffinityTerm] = (),  # type: ignore[assignment]
    peers: list[PeerPod] = (),  # type: ignore[assignment]
    namespace_labels: dict[str, dict[str, str]] | None = None,
) -> str | None:
    return refusal(
        namespace="ml",
        labels=labels or {"app": "trainer"},
        affinity=list(affinity),
        anti_affinity=list(anti),
        node_labels=NODES[node],
        peers=list(peers),
        labels_of=NODES,
        namespace_labels=namespace_labels or {},
    )


def test_affinity_to_a_zone_admits_only_nodes_of_the_zone_where_a_matching_pod_runs() -> None:
    cache = [_peer("cache-0", "a2", app="cache")]
    allowed = {n for n in NODES if _why(n, affinity=[_term(app="cache")], peers=cache) is None}
    assert allowed == {"a1", "a2"}
    assert _why("bare", affinity=[_term(app="cache")], peers=cache) == "affinity"


def test_the_first_pod_of_a_group_that_matches_its_own_terms_may_go_anywhere_with_the_keys() -> (
    None
):
    own = [_term(app="trainer")]
    assert {n for n in NODES if _why(n, affinity=own) is None} == {"a1", "a2", "b1"}
    # a term that does not select the pod itself gives no such exception
    assert {n for n in NODES if _why(n, affinity=[_term(app="cache")]) is None} == set()


def test_a_matching_pod_in_another_namespace_does_not_count_unless_the_term_names_it() -> None:
    cache = [_peer("cache-0", "a1", ns="infra", app="cache")]
    assert _why("a1", affinity=[_term(app="cache")], peers=cache) == "affinity"
    named = _term(app="cache", ns=["infra"])
    assert _why("a1", affinity=[named], peers=cache) is None


def test_a_namespace_selector_counts_the_pods_of_the_namespaces_it_selects() -> None:
    term = PodAffinityTerm(
        selector=LabelSelector(match_labels={"app": "cache"}),
        namespace_selector=LabelSelector(match_labels={"team": "infra"}),
        topology_key=ZONE,
    )
    cache = [_peer("cache-0", "b1", ns="infra", app="cache")]
    assert _why("b1", affinity=[term], peers=cache, namespace_labels={}) == "affinity"
    labels = {"infra": {"team": "infra"}}
    assert _why("b1", affinity=[term], peers=cache, namespace_labels=labels) is None
    assert _why("a1", affinity=[term], peers=cache, namespace_labels=labels) == "affinity"


def test_anti_affinity_by_zone_keeps_the_pod_out_of_every_node_of_a_zone_with_a_match() -> None:
    peers = [_peer("trainer-0", "a1", app="trainer")]
    anti = [_term(app="trainer")]
    assert {n for n in NODES if _why(n, anti=anti, peers=peers) is None} == {"b1", "bare"}
    by_host = [_term(HOST, app="trainer")]
    assert {n for n in NODES if _why(n, anti=by_host, peers=peers) is None} == {
        "a2",
        "b1",
        "bare",
    }


def test_an_existing_pods_anti_affinity_keeps_the_incoming_pod_out_of_its_domain() -> None:
    guard = _peer("solo-0", "b1", app="solo").model_copy(
        update={"anti_affinity_terms": [_term(app="trainer")]}
    )
    assert _why("b1", peers=[guard]) == "existing_anti_affinity"
    assert _why("a1", peers=[guard]) is None
    assert _why("b1", labels={"app": "other"}, peers=[guard]) is None


@pytest.mark.parametrize(
    ("expression", "selected"),
    [
        (Requirement(key="app", operator="In", values=["trainer", "x"]), True),
        (Requirement(key="app", operator="NotIn", values=["trainer"]), False),
        (Requirement(key="app", operator="Exists"), True),
        (Requirement(key="app", operator="DoesNotExist"), False),
        (Requirement(key="tier", operator="NotIn", values=["web"]), True),
    ],
)
def test_match_expressions_select_as_the_api_does(expression: Requirement, selected: bool) -> None:
    term = PodAffinityTerm(
        selector=LabelSelector(match_expressions=[expression]), namespaces=["ml"], topology_key=HOST
    )
    assert term_matches(term, "ml", {"app": "trainer"}, {}) is selected


def test_a_term_without_a_label_selector_selects_no_pod_and_an_empty_one_selects_all() -> None:
    nil = PodAffinityTerm(selector=None, namespaces=["ml"], topology_key=HOST)
    empty = PodAffinityTerm(selector=LabelSelector(), namespaces=["ml"], topology_key=HOST)
    assert not term_matches(nil, "ml", {"app": "x"}, {})
    assert term_matches(empty, "ml", {"app": "x"}, {})


def _evicted(name: str, labels: dict[str, str], **sched: Any) -> Any:
    s = PodScheduling(requests={"cpu": 1000, "memory": GI, "pods": 1}, **sched)
    return pod(name).model_copy(update={"scheduling": s, "labels": labels})


def _rooms(*names: str) -> list[RoomOnNode]:
    free = {"cpu": 64_000, "memory": 64 * GI, "pods": 100}
    here = RoomOnNode(name="n1", labels={HOST: "n1", ZONE: "a"}, free=free)
    return [here, *(RoomOnNode(name=n, labels=NODES[n], free=free) for n in names)]


def test_replicas_evicted_together_see_each_other_placed_earlier_in_the_plan() -> None:
    anti = [_term(HOST, app="trainer")]
    pods = [_evicted(f"trainer-{i}", {"app": "trainer"}, anti_affinity_terms=anti) for i in (0, 1)]
    plan = plan_tier1(view(pods, room=_rooms("b1"), peers=[]))
    notes = [n for n in plan.notes if n.code == "evicted_pending"]
    assert [n.params["why"] for n in notes] == ["affinity"]
    assert notes[0].params["pod"] in ("ml/trainer-0", "ml/trainer-1")
    # two nodes: both land, nothing to say
    plan = plan_tier1(view(pods, room=_rooms("b1", "a2"), peers=[]))
    assert not [n for n in plan.notes if n.code.startswith("evicted")]


def test_an_evicted_pod_no_longer_counts_and_counts_again_where_the_plan_puts_it() -> None:
    cache = _evicted("cache", {"app": "cache"})
    trainer = _evicted("trainer", {"app": "trainer"}, affinity_terms=[_term(app="cache")])
    v = view([trainer, cache], room=_rooms("b1"), peers=[_peer("cache", "n1", app="cache")])
    # the trainer goes first: its cache has left n1 and is not placed yet
    [note] = landing_notes(v, [trainer, cache])
    assert (note.params["pod"], note.params["why"]) == ("ml/trainer", "affinity")
    # the cache goes first and lands on b1 (zone b): the trainer follows it there
    assert landing_notes(v, [cache, trainer]) == []


def test_without_the_peers_read_only_one_replica_per_node_is_modelled() -> None:
    trainer = _evicted("trainer", {"app": "trainer"}, affinity_terms=[_term(app="cache")])
    plan = plan_tier1(view([trainer], room=_rooms("b1")))
    assert not [n for n in plan.notes if n.code.startswith("evicted")]


def test_a_pod_kept_out_by_affinity_is_said_so_in_each_locale() -> None:
    from bot.render.sentences import sentence

    anti = [_term(HOST, app="trainer")]
    pods = [_evicted(f"trainer-{i}", {"app": "trainer"}, anti_affinity_terms=anti) for i in (0, 1)]
    plan = plan_tier1(view(pods, room=_rooms("b1"), peers=[]))
    [note] = [n for n in plan.notes if n.code == "evicted_pending"]
    en = sentence("notes", note.code, note.params, fmt="text", locale="en", strict=True)
    zh = sentence("notes", note.code, note.params, fmt="text", locale="zh-CN", strict=True)
    assert str(note.params["pod"]) in en and "anti-affinity" in en
    assert str(note.params["pod"]) in zh and "反亲和性" in zh
