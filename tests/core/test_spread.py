"""Topology spread constraints with whenUnsatisfiable DoNotSchedule decide where an evicted
or restarted pod can go, as kube-scheduler's PodTopologySpread filter decides it; and
``matchLabelKeys`` narrow the selectors as the API server and the scheduler merge them."""

from __future__ import annotations

from typing import Any

from bot.core.model.cluster import NodeInfo, RoomOnNode, Taint
from bot.core.model.workloads import (
    LabelSelector,
    PeerPod,
    PodScheduling,
    Requirement,
    SpreadConstraint,
    Toleration,
)
from bot.core.remedies.destinations import landing_notes
from bot.core.remedies.spread import Spread
from bot.kube.scheduling import parse_scheduling
from tests.core.analysis_builders import pod, view

HOST = "kubernetes.io/hostname"
ZONE = "topology.kubernetes.io/zone"
APP = LabelSelector(match_labels={"app": "web"})


def _room(name: str, zone: str | None = "a", **kw: Any) -> RoomOnNode:
    labels = {HOST: name, "pool": kw.pop("pool", "general")}
    if zone is not None:
        labels[ZONE] = zone
    return RoomOnNode(name=name, labels=labels, free={"cpu": 8000, "pods": 10}, **kw)


N3 = NodeInfo(name="n3", allocatable={"memory": "100Gi"})
ROOMS = [_room("a1", "a"), _room("a2", "a"), _room("b1", "b"), _room("c1", "c")]


def _web(node: str, name: str, ns: str = "ml", **kw: Any) -> PeerPod:
    labels = kw.pop("labels", {"app": "web"})
    return PeerPod(key=f"{ns}/{name}", namespace=ns, labels=labels, node=node, **kw)


def _open(
    constraint: SpreadConstraint,
    peers: list[PeerPod],
    *,
    rooms: list[RoomOnNode] = ROOMS,
    labels: dict[str, str] | None = None,
    **sched: Any,
) -> set[str]:
    rule = Spread(
        namespace="ml",
        labels={"app": "web"} if labels is None else labels,
        sched=PodScheduling(spread_constraints=[constraint], **sched),
        rooms=rooms,
        peers=peers,
    )
    return {r.name for r in rooms if rule.refusal(r.labels) is None}


def _c(key: str = ZONE, **kw: Any) -> SpreadConstraint:
    return SpreadConstraint(topology_key=key, selector=kw.pop("selector", APP), **kw)


def test_a_node_whose_domain_would_exceed_max_skew_is_refused() -> None:
    # zones: a 2, b 1, c 0 -> the minimum is 0; a and b would be at skew 3 and 2
    peers = [_web("a1", "w0"), _web("a2", "w1"), _web("b1", "w2")]
    assert _open(_c(), peers) == {"c1"}
    assert _open(_c(max_skew=2), peers) == {"b1", "c1"}


def test_a_node_without_the_topology_key_is_refused() -> None:
    rooms = [*ROOMS, _room("bare", None)]
    assert "bare" not in _open(_c(), [], rooms=rooms)


def test_a_node_without_the_key_is_no_domain_and_does_not_lower_the_minimum() -> None:
    rooms = [_room("a1", "a"), _room("b1", "b"), _room("bare", None)]
    peers = [_web("a1", "w0"), _web("b1", "w1"), _web("bare", "w2"), _web("bare", "w3")]
    assert _open(_c(), peers, rooms=rooms) == {"a1", "b1"}


def test_pods_of_other_namespaces_terminating_pods_and_unselected_pods_do_not_count() -> None:
    peers = [
        _web("a1", "other", ns="prod"),
        _web("a1", "leaving", terminating=True),
        _web("a1", "db", labels={"app": "db"}),
    ]
    assert _open(_c(), peers) == {"a1", "a2", "b1", "c1"}


def test_a_pod_its_selector_does_not_select_adds_no_skew_of_its_own() -> None:
    peers = [_web("a1", "w0"), _web("b1", "w1")]  # a 1, b 1, c 0
    assert _open(_c(), peers) == {"c1"}
    assert _open(_c(), peers, labels={"app": "batch"}) == {"a1", "a2", "b1", "c1"}


def test_fewer_domains_than_min_domains_make_the_minimum_zero() -> None:
    peers = [_web("a1", "w0"), _web("b1", "w1"), _web("c1", "w2")]  # 1 each, 3 domains
    assert _open(_c(), peers) == {"a1", "a2", "b1", "c1"}
    assert _open(_c(min_domains=3), peers) == {"a1", "a2", "b1", "c1"}
    assert _open(_c(min_domains=4), peers) == set()


def test_an_empty_or_absent_selector_counts_no_pod() -> None:
    peers = [_web("a1", "w0"), _web("a2", "w1")]
    assert _open(_c(selector=LabelSelector()), peers) == {"a1", "a2", "b1", "c1"}
    assert _open(_c(selector=None), peers) == {"a1", "a2", "b1", "c1"}


def test_node_affinity_policy_honor_leaves_nodes_the_pod_cannot_use_out_of_the_domains() -> None:
    rooms = [_room("a1", "a"), _room("b1", "b"), _room("g1", "g", pool="gpu")]
    peers = [_web("a1", "w0"), _web("b1", "w1")]  # g holds none, but the pod cannot go there
    pinned = {"node_selector": {"pool": "general"}}
    # (the spread filter alone: NodeAffinity keeps the pod off g1 by itself)
    assert _open(_c(), peers, rooms=rooms, **pinned) == {"a1", "b1", "g1"}
    assert _open(_c(node_affinity_policy="Ignore"), peers, rooms=rooms, **pinned) == {"g1"}


def test_a_cordoned_node_is_a_domain_unless_the_taints_policy_is_honor() -> None:
    rooms = [_room("n1", zone=None), _room("n2", zone=None), _room("n3", None, unschedulable=True)]
    peers = [_web("n1", "w0"), _web("n2", "w1")]
    assert _open(_c(HOST), peers, rooms=rooms) == {"n3"}  # only n3 keeps the skew at 1
    # (the spread filter alone: the cordon keeps the pod off n3 by itself)
    assert _open(_c(HOST, node_taints_policy="Honor"), peers, rooms=rooms) == {"n1", "n2", "n3"}
    tolerant = [Toleration(key="node.kubernetes.io/unschedulable", operator="Exists")]
    honor = _c(HOST, node_taints_policy="Honor")
    assert _open(honor, peers, rooms=rooms, tolerations=tolerant) == {"n3"}


def test_a_tainted_node_counts_under_honor_only_when_its_taint_is_tolerated() -> None:
    tainted = _room("t1", "t", taints=[Taint(key="gpu", value="true", effect="NoSchedule")])
    rooms = [_room("a1", "a"), tainted]
    peers = [_web("a1", "w0")]
    assert _open(_c(node_taints_policy="Honor"), peers, rooms=rooms) == {"a1", "t1"}
    assert _open(_c(), peers, rooms=rooms) == {"t1"}


def _raw(labels: dict[str, str], **spec: Any) -> dict[str, Any]:
    return {"metadata": {"namespace": "ml", "name": "p", "labels": labels}, "spec": spec}


def test_match_label_keys_narrow_a_spread_selector_to_the_pods_own_values() -> None:
    labels = {"app": "web", "pod-template-hash": "abc"}
    spread = {
        "maxSkew": 1,
        "topologyKey": ZONE,
        "whenUnsatisfiable": "DoNotSchedule",
        "labelSelector": {"matchLabels": {"app": "web"}},
        "matchLabelKeys": ["pod-template-hash", "absent"],
    }
    loose = {**spread, "whenUnsatisfiable": "ScheduleAnyway"}
    [c] = parse_scheduling(
        _raw(labels, topologySpreadConstraints=[spread, loose])
    ).spread_constraints
    assert c.selector is not None
    assert c.selector.match_expressions == [
        Requirement(key="pod-template-hash", operator="In", values=["abc"])
    ]
    assert (c.min_domains, c.node_affinity_policy, c.node_taints_policy) == (1, "Honor", "Ignore")
    # another revision's pods no longer count
    old = [
        _web("a1", f"old{i}", labels={"app": "web", "pod-template-hash": "zzz"}) for i in range(3)
    ]
    assert _open(c, old, labels=labels) == {"a1", "a2", "b1", "c1"}
    assert _open(_c(), old, labels=labels) == {"b1", "c1"}


def test_match_and_mismatch_label_keys_narrow_an_affinity_term_once() -> None:
    labels = {"app": "web", "tenant": "t1"}
    term = {
        "topologyKey": ZONE,
        "labelSelector": {
            "matchLabels": {"app": "web"},
            # what a 1.31+ API server stored already: merging again adds nothing
            "matchExpressions": [{"key": "tenant", "operator": "In", "values": ["t1"]}],
        },
        "matchLabelKeys": ["tenant"],
        "mismatchLabelKeys": ["app", "absent"],
    }
    raw = _raw(
        labels,
        affinity={"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}},
    )
    [t] = parse_scheduling(raw).anti_affinity_terms
    assert t.selector is not None
    assert t.selector.match_expressions == [
        Requirement(key="tenant", operator="In", values=["t1"]),
        Requirement(key="app", operator="NotIn", values=["web"]),
    ]


def test_tier1_says_an_evicted_pod_stays_pending_when_spread_rules_out_every_node() -> None:
    c = _c(HOST)
    evicted = pod("web-0", node_name="n3", labels={"app": "web"})
    evicted = evicted.model_copy(
        update={
            "scheduling": PodScheduling(requests={"cpu": 100, "pods": 1}, spread_constraints=[c])
        }
    )
    rooms = [_room("n1", None), _room("n2", None), _room("n3", None)]
    peers = [_web("n1", "web-1"), _web("n2", "web-2"), _web("n3", "web-0")]
    v = view([evicted], node=N3, room=rooms, peers=peers)
    [note] = landing_notes(v, [evicted])
    assert (note.code, note.params["why"]) == ("evicted_pending", "spread")
    # honouring taints, the cordoned n3 is no domain and web-0 lands on n1 or n2
    honor = c.model_copy(update={"node_taints_policy": "Honor"})
    evicted = evicted.model_copy(
        update={
            "scheduling": PodScheduling(
                requests={"cpu": 100, "pods": 1}, spread_constraints=[honor]
            )
        }
    )
    assert landing_notes(view([evicted], node=N3, room=rooms, peers=peers), [evicted]) == []


def test_a_pod_only_hostname_spread_refuses_makes_the_autoscaler_add_a_node() -> None:
    """A node the autoscaler adds is a new hostname, a domain with none of the pods: the
    eviction scales the pool up. By zone, the new node is in a refused zone: still Pending."""
    pool = {"karpenter.sh/nodepool": "general"}
    rooms = [
        _room(n, z).model_copy(update={"labels": {**_room(n, z).labels, **pool}})
        for n, z in (("n1", "a"), ("n2", "b"), ("n3", "a"))
    ]
    peers = [_web("n1", "web-1"), _web("n2", "web-2"), _web("n3", "web-0")]
    for key, code, why in ((HOST, "evicted_scales_up", None), (ZONE, "evicted_pending", "spread")):
        sched = PodScheduling(requests={"cpu": 100, "pods": 1}, spread_constraints=[_c(key)])
        evicted = pod("web-0", node_name="n3", labels={"app": "web"})
        evicted = evicted.model_copy(update={"scheduling": sched})
        # zone: a holds web-1 (web-0 leaves), b holds web-2; a third zone c (no node of the
        # pool, an empty domain from another node) makes the minimum 0
        extra = [_room("c1", "c", taints=[Taint(key="x", effect="NoSchedule")])]
        [note] = landing_notes(view([evicted], node=N3, room=rooms + extra, peers=peers), [evicted])
        assert (note.code, note.params.get("why")) == (code, why)
