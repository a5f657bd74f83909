"""A fleet around a generated node (``generating.plant``), with pod affinity, anti-affinity
and topology spread constraints planted so that where each evicted pod can go is known by
construction, never by running the product's rules.

``place(planted, rng)`` gives the node's view every node's room (the generated node,
``k`` = 2-5 other nodes in random zones, and one node tainted ``gen/reserved`` alone in zone
``zt``), the pods elsewhere that the rules count (``peers``), and each CPU pod of the node a
*role* with the answer tier 1 must give if it evicts that pod (``Placed.answers``: None when
it lands somewhere, ``scales_up`` when it makes the autoscaler add a node, else the
``evicted_pending`` reason; ``POOLED`` for a fleet in an autoscaled pool, about a third of
them). Each role's labels carry the pod's
own uid, so no role reaches another pod. Rooms have room for any pod here, so only the
planted rules decide.

Roles (``ROLES``) and why their answer holds:

- ``free``: no rule: it lands.
- ``anti_pending``: required anti-affinity by hostname to pods labelled ``gen/block=<uid>``,
  and such a pod runs on every untainted other node (the tainted one does not take it
  anyway): Pending, ``affinity``.
- ``anti_fits``: the same, with one untainted node left without a blocker: it lands there.
- ``affinity_pending``: required affinity by zone to the pod ``gen/anchor=<uid>``, which
  runs only on the tainted node, alone in its zone: no node the pod may use shares a zone
  with it: Pending, ``affinity``.
- ``affinity_fits``: the same anchor on a random untainted node: that node passes.
- ``shunned_pending``: a pod on every untainted other node has a required anti-affinity by
  hostname to ``gen/shun=<uid>``, which this pod carries: Pending, ``affinity``.
- ``spread_pending``: spread by hostname over ``gen/spread=<uid>`` (``DoNotSchedule``,
  ``maxSkew`` m = 1-3), m such pods on every other node (the tainted one too). The drained
  node still counts as a domain (``nodeTaintsPolicy`` Ignore) and holds none once the pod
  is evicted, so the minimum is 0 and every other node would be at m + 1: Pending,
  ``spread``.
- ``spread_honor_fits``: the same with ``nodeTaintsPolicy: Honor``: the cordoned and the
  tainted node are no domains, the minimum is m and every untainted node is at 1: it lands.
- ``spread_min_domains_pending``: as ``spread_honor_fits`` with ``minDomains`` one more than
  the untainted other nodes: the minimum is 0 again: Pending, ``spread``.
- ``spread_keys_fits``: as ``spread_pending``, but the peers are another revision
  (``pod-template-hash``) and the constraint has ``matchLabelKeys: [pod-template-hash]``:
  none of them counts, every domain holds 0: it lands.
- ``mixed_pending``: blockers of its anti-affinity (as ``anti_pending``) on a random part of
  the untainted nodes, and one pod of its spread (hostname, maxSkew 1) on each of the others:
  every node is refused, by one rule or the other: Pending, ``affinity_spread``.

The constraints are written as pod JSON and parsed by ``bot.kube.scheduling`` (so
``matchLabelKeys`` is merged as the product reads it from a real pod).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from bot.core.model.cluster import ClusterView, PodInfo, RoomOnNode, Taint
from bot.core.model.workloads import PeerPod, PodScheduling
from bot.kube.scheduling import affinity_terms, spread_constraints
from tests.core.generating import NODE, Planted

HOST = "kubernetes.io/hostname"
ZONE = "topology.kubernetes.io/zone"
TAINTED = "gen-tainted"
ROLES = (
    "free",
    "anti_pending",
    "anti_fits",
    "affinity_pending",
    "affinity_fits",
    "shunned_pending",
    "spread_pending",
    "spread_honor_fits",
    "spread_min_domains_pending",
    "spread_keys_fits",
    "mixed_pending",
)
ANSWER: dict[str, str | None] = {
    "free": None,
    "anti_pending": "affinity",
    "anti_fits": None,
    "affinity_pending": "affinity",
    "affinity_fits": None,
    "shunned_pending": "affinity",
    "spread_pending": "spread",
    "spread_honor_fits": None,
    "spread_min_domains_pending": "spread",
    "spread_keys_fits": None,
    "mixed_pending": "affinity_spread",
}
#: when the untainted nodes belong to an autoscaled pool (``pooled``), a node the autoscaler
#: adds is a new hostname with none of the pods: what only hostname-keyed rules refused
#: scales the pool up; the zone-keyed affinity still refuses it (a new node is in a zone
#: without the anchor)
POOLED: dict[str, str | None] = ANSWER | {
    "anti_pending": "scales_up",
    "shunned_pending": "scales_up",
    "spread_pending": "scales_up",
    "spread_min_domains_pending": "scales_up",
    "mixed_pending": "scales_up",
}
POOL_LABEL = "karpenter.sh/nodepool"
HUGE = 1 << 60


@dataclass(frozen=True)
class Placed:
    planted: Planted
    view: ClusterView
    roles: dict[str, str]  # pod key -> role
    answers: dict[str, str | None]  # pod key -> None (lands) or the evicted_pending reason


def _room(
    name: str, zone: str, *, taints: list[Taint] | None = None, pooled: bool = False
) -> RoomOnNode:
    return RoomOnNode(
        name=name,
        labels={HOST: name, ZONE: zone} | ({POOL_LABEL: "gen-pool"} if pooled else {}),
        taints=taints or [],
        free={"memory": HUGE, "cpu": HUGE, "pods": 10_000},
    )


class _Fleet:
    def __init__(self, rng: Any, others: list[str]) -> None:
        self.rng = rng
        self.others = others  # untainted nodes other than the generated one
        self.peers: list[PeerPod] = []
        self.namespace = "ml"  # the namespace of the pod whose role is being planted

    def peer(self, node: str, labels: dict[str, str], raw: dict[str, Any] | None = None) -> None:
        n = len(self.peers)
        self.peers.append(
            PeerPod(
                key=f"{self.namespace}/gen-peer-{n}",
                namespace=self.namespace,
                labels=labels,
                node=node,
                anti_affinity_terms=affinity_terms(raw, "podAntiAffinity") if raw else [],
            )
        )


def _spread(uid: str, *, skew: int = 1, **extra: Any) -> dict[str, Any]:
    return {
        "maxSkew": skew,
        "topologyKey": HOST,
        "whenUnsatisfiable": "DoNotSchedule",
        "labelSelector": {"matchLabels": {"gen/spread": uid}},
        **extra,
    }


def _term(key: str, **labels: str) -> dict[str, Any]:
    return {"topologyKey": key, "labelSelector": {"matchLabels": labels}}


def _role(f: _Fleet, role: str, pod: PodInfo) -> tuple[dict[str, str], dict[str, Any]]:
    """The pod's extra labels and pod spec for ``role``; its peers go into ``f``."""
    uid, rng = pod.uid, f.rng
    f.namespace = pod.namespace
    spec: dict[str, Any] = {}
    labels: dict[str, str] = {}
    required = "requiredDuringSchedulingIgnoredDuringExecution"
    if role in ("anti_pending", "anti_fits"):
        spec["affinity"] = {"podAntiAffinity": {required: [_term(HOST, **{"gen/block": uid})]}}
        hosts = list(f.others)
        if role == "anti_fits":
            hosts.remove(rng.choice(hosts))
        for h in hosts:
            f.peer(h, {"gen/block": uid})
    elif role in ("affinity_pending", "affinity_fits"):
        spec["affinity"] = {"podAffinity": {required: [_term(ZONE, **{"gen/anchor": uid})]}}
        f.peer(TAINTED if role == "affinity_pending" else rng.choice(f.others), {"gen/anchor": uid})
    elif role == "shunned_pending":
        labels["gen/shun"] = uid
        for h in f.others:
            raw = {
                "metadata": {"namespace": pod.namespace, "labels": {}},
                "spec": {
                    "affinity": {"podAntiAffinity": {required: [_term(HOST, **{"gen/shun": uid})]}}
                },
            }
            f.peer(h, {}, raw)
    elif role.startswith("spread") or role == "mixed_pending":
        labels["gen/spread"] = uid
        skew = rng.randint(1, 3) if role != "mixed_pending" else 1
        extra: dict[str, Any] = {}
        if role in ("spread_honor_fits", "spread_min_domains_pending"):
            extra["nodeTaintsPolicy"] = "Honor"
        if role == "spread_min_domains_pending":
            extra["minDomains"] = len(f.others) + 1
        peer_labels = {"gen/spread": uid}
        if role == "spread_keys_fits":
            labels["pod-template-hash"] = "new"
            peer_labels["pod-template-hash"] = "old"
            extra["matchLabelKeys"] = ["pod-template-hash"]
        spec["topologySpreadConstraints"] = [_spread(uid, skew=skew, **extra)]
        hosts = [*f.others, TAINTED]
        if role == "mixed_pending":
            blocked = rng.sample(f.others, rng.randint(1, len(f.others) - 1))
            spec["affinity"] = {"podAntiAffinity": {required: [_term(HOST, **{"gen/block": uid})]}}
            for h in blocked:
                f.peer(h, {"gen/block": uid})
            hosts = [h for h in f.others if h not in blocked]
        for h in hosts:
            for _ in range(skew):
                f.peer(h, dict(peer_labels))
    return labels, spec


def place(planted: Planted, rng: Any) -> Placed:
    """``planted`` with a fleet and a role per CPU pod (see the module docstring)."""
    view = planted.view
    zones = ["z0", "z1", "z2"]
    others = [f"gen-other-{i}" for i in range(1, rng.randint(2, 5) + 1)]
    pooled = rng.random() < 0.3
    rooms = [_room(NODE, "z0")]
    rooms += [_room(h, rng.choice(zones), pooled=pooled) for h in others]
    rooms.append(
        _room(TAINTED, "zt", taints=[Taint(key="gen/reserved", value="true", effect="NoSchedule")])
    )
    fleet = _Fleet(rng, others)
    roles: dict[str, str] = {}
    answers: dict[str, str | None] = {}
    pods: list[PodInfo] = []
    for p in view.pods:
        requests = {"memory": p.memory_request_bytes, "cpu": 100, "pods": 1}
        if p.accelerated or p.is_daemonset:
            sched = PodScheduling(requests=requests)
            pods.append(p.model_copy(update={"scheduling": sched}))
            fleet.peer(NODE, dict(p.labels))
            continue
        role = rng.choice(ROLES)
        extra, spec = _role(fleet, role, p)
        labels = {**p.labels, **extra}
        raw = {"metadata": {"namespace": p.namespace, "labels": labels}, "spec": spec}
        sched = PodScheduling(
            requests=requests,
            affinity_terms=affinity_terms(raw, "podAffinity"),
            anti_affinity_terms=affinity_terms(raw, "podAntiAffinity"),
            spread_constraints=spread_constraints(raw),
        )
        placed = p.model_copy(update={"labels": labels, "scheduling": sched})
        pods.append(placed)
        roles[p.key], answers[p.key] = role, (POOLED if pooled else ANSWER)[role]
        fleet.peers.append(
            PeerPod(
                key=p.key,
                namespace=p.namespace,
                labels=labels,
                node=NODE,
                anti_affinity_terms=sched.anti_affinity_terms,
            )
        )
    placed_view = view.model_copy(update={"pods": pods, "room": rooms, "peers": fleet.peers})
    return Placed(planted, placed_view, roles, answers)
