"""A local PersistentVolume pins its pod to a node: the gateway reads PVC -> PV node affinity,
and tier 1 says the evicted pod would stay Pending."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from bot.core.remedies.planning import plan_tier1
from bot.kube.gateway import Gateway
from gpunode_sandbox.kubesim import KubeSim, load_scenario
from tests.kube.remedy_scenarios import seed_with

Make = Callable[..., Awaitable[tuple[Gateway, KubeSim]]]
NODE = "gpu-node-01"


def _local_pv(node: str) -> list[dict[str, Any]]:
    return [
        {
            "apiVersion": "v1",
            "kind": "PersistentVolume",
            "metadata": {"name": "prep-scratch"},
            "spec": {
                "capacity": {"storage": "100Gi"},
                "accessModes": ["ReadWriteOnce"],
                "storageClassName": "local-nvme",
                "local": {"path": "/mnt/nvme0"},
                "claimRef": {"namespace": "data-prep", "name": "scratch"},
                "nodeAffinity": {
                    "required": {
                        "nodeSelectorTerms": [
                            {
                                "matchExpressions": [
                                    {
                                        "key": "kubernetes.io/hostname",
                                        "operator": "In",
                                        "values": [node],
                                    }
                                ]
                            }
                        ]
                    }
                },
            },
        },
        {
            "apiVersion": "v1",
            "kind": "PersistentVolumeClaim",
            "metadata": {"name": "scratch", "namespace": "data-prep"},
            "spec": {
                "accessModes": ["ReadWriteOnce"],
                "storageClassName": "local-nvme",
                "resources": {"requests": {"storage": "100Gi"}},
                "volumeName": "prep-scratch",
            },
        },
    ]


def _preprocess_on_the_volume() -> dict[str, Any]:
    base = next(
        w.model_dump(mode="json") for w in load_scenario("seed").workloads if w.name == "preprocess"
    )
    volume = {"name": "scratch", "persistentVolumeClaim": {"claimName": "scratch"}}
    base["pod_spec"] = dict(base.get("pod_spec") or {}) | {"volumes": [volume]}
    return base


async def test_an_evicted_pod_on_a_local_volume_of_this_node_is_said_to_stay_pending(
    make_gateway: Make,
) -> None:
    gw, _ = await make_gateway(
        seed_with([_preprocess_on_the_volume()], drop=("preprocess",), objects=_local_pv(NODE))
    )
    view = await gw.get_cluster_view(NODE)
    [prep] = [p for p in view.pods if p.name.startswith("preprocess-")]
    assert prep.scheduling is not None and prep.scheduling.claims == ["scratch"]
    [[term]] = prep.scheduling.volume_terms
    assert [(r.key, r.values) for r in term] == [("kubernetes.io/hostname", [NODE])]
    plan = plan_tier1(view)  # no diagnosis: every evictable pod goes
    assert prep.key in plan.blast_radius
    notes = [n for n in plan.notes if n.params.get("pod") == prep.key]
    assert [(n.code, n.params["why"]) for n in notes] == [("evicted_pending", "no_match")]


async def test_a_pod_whose_volume_is_elsewhere_lands_there(make_gateway: Make) -> None:
    gw, _ = await make_gateway(
        seed_with(
            [_preprocess_on_the_volume()], drop=("preprocess",), objects=_local_pv("cpu-node-01")
        )
    )
    view = await gw.get_cluster_view(NODE)
    plan = plan_tier1(view)
    [prep] = [p for p in view.pods if p.name.startswith("preprocess-")]
    assert prep.key in plan.blast_radius
    assert not [n for n in plan.notes if n.params.get("pod") == prep.key]


def test_a_required_anti_affinity_against_its_own_labels_is_read() -> None:
    from bot.kube.scheduling import parse_scheduling

    term = {
        "topologyKey": "kubernetes.io/hostname",
        "labelSelector": {"matchLabels": {"app": "prep"}},
    }
    pod: dict[str, Any] = {
        "metadata": {"labels": {"app": "prep", "tier": "batch"}},
        "spec": {
            "containers": [],
            "affinity": {
                "podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}
            },
        },
    }
    assert parse_scheduling(pod).spread_from_siblings
    zone = dict(term, topologyKey="topology.kubernetes.io/zone")
    pod["spec"]["affinity"]["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"] = [
        zone
    ]
    assert not parse_scheduling(pod).spread_from_siblings  # per zone: not modelled
    other = dict(term, labelSelector={"matchLabels": {"app": "web"}})
    pod["spec"]["affinity"]["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"] = [
        other
    ]
    assert not parse_scheduling(pod).spread_from_siblings


def test_pod_affinity_terms_are_read_with_their_namespaces_resolved() -> None:
    from bot.kube.scheduling import affinity_terms

    pod: dict[str, Any] = {
        "metadata": {"namespace": "ml", "labels": {"app": "t"}},
        "spec": {
            "affinity": {
                "podAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": [
                        {"topologyKey": "zone", "labelSelector": {"matchLabels": {"app": "c"}}},
                        {"topologyKey": "zone", "namespaceSelector": {}, "labelSelector": {}},
                        {"topologyKey": "zone", "namespaces": ["infra"]},
                    ]
                }
            }
        },
    }
    own, every, named = affinity_terms(pod, "podAffinity")
    assert own.namespaces == ["ml"] and own.namespace_selector is None
    assert own.selector is not None and own.selector.match_labels == {"app": "c"}
    # an empty namespaceSelector means every namespace; an empty labelSelector every pod
    assert every.namespaces == [] and every.namespace_selector is not None
    assert every.selector is not None and not every.selector.match_labels
    # no labelSelector at all selects no pod
    assert named.namespaces == ["infra"] and named.selector is None
    assert affinity_terms(pod, "podAntiAffinity") == []
