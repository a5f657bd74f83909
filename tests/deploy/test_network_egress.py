"""Every overlay's NetworkPolicies let the bot reach what it is configured to use: DNS, the
API server, Slack, Prometheus at the documented URL, and the store when it is PostgreSQL.

The overlays are rendered as shipped; each dependency is a (namespace or outside, port,
protocol) destination, checked against the egress rules of every policy that selects the bot
pod (NetworkPolicies add up). The DSN port comes from the one the HA overlay documents."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from tests.deploy.kustomizing import find, render

REPO = Path(__file__).resolve().parents[2]
DEPLOY = REPO / "deploy"
OVERLAYS = ["base", *sorted(p.name for p in (DEPLOY / "overlays").iterdir() if p.is_dir())]
NS_LABEL = "kubernetes.io/metadata.name"
#: the Prometheus each platform's README section names (prometheus.url)
PROMETHEUS = {
    "default": "http://prometheus-operated.monitoring:9090",
    "openshift": "https://thanos-querier.openshift-monitoring.svc:9091",
}


@dataclass(frozen=True)
class Destination:
    what: str
    namespace: str | None  # None: outside the cluster (or a namespace nobody named)
    port: int
    protocol: str = "TCP"


def _directory(overlay: str) -> Path:
    return DEPLOY / "base" if overlay == "base" else DEPLOY / "overlays" / overlay


def _bot_labels(objects: list[dict[str, Any]]) -> dict[str, str]:
    deployment = find(objects, "Deployment", "gpunode")
    return dict(deployment["spec"]["template"]["metadata"]["labels"])


def _env(objects: list[dict[str, Any]]) -> dict[str, Any]:
    deployment = find(objects, "Deployment", "gpunode")
    [bot] = [
        c for c in deployment["spec"]["template"]["spec"]["containers"] if c["name"] == "gpunode"
    ]
    return {e["name"]: e for e in bot.get("env") or []}


def _documented_dsn(overlay: str) -> str:
    text = (_directory(overlay) / "kustomization.yaml").read_text()
    match = re.search(r"dsn='([^']+)'", text)
    assert match, f"{overlay}: the kustomization documents no DSN"
    return match.group(1)


def dependencies(overlay: str, objects: list[dict[str, Any]]) -> list[Destination]:
    openshift = overlay == "openshift"
    dns_ns, dns_port = ("openshift-dns", 5353) if openshift else ("kube-system", 53)
    deps = [
        Destination("DNS", dns_ns, dns_port, "UDP"),
        Destination("DNS over TCP", dns_ns, dns_port, "TCP"),
        Destination("API server", None, 6443),
        Destination("Slack", None, 443),
    ]
    prom = urlsplit(PROMETHEUS["openshift" if openshift else "default"])
    assert prom.hostname is not None
    deps.append(
        Destination(
            "Prometheus",
            prom.hostname.split(".")[1],
            prom.port or (443 if prom.scheme == "https" else 80),
        )
    )
    mode = _env(objects).get("GPUNODE_KUBE__COLLECTOR_MODE", {}).get("value")
    if mode == "daemonset":  # the agents listen on their node's address (hostNetwork)
        port = int(_env(objects)["GPUNODE_KUBE__AGENT_PORT"]["value"])
        deps.append(Destination("the nodes' collector agents", None, port))
    if "GPUNODE_STORE__DSN" in _env(objects):
        dsn = urlsplit(_documented_dsn(overlay))
        assert dsn.scheme.startswith("postgres")
        deps.append(Destination("PostgreSQL store", None, dsn.port or 5432))
    return deps


def _selects(policy: dict[str, Any], labels: dict[str, str]) -> bool:
    wanted = (policy["spec"].get("podSelector") or {}).get("matchLabels") or {}
    return all(labels.get(k) == v for k, v in wanted.items())


def _peer_allows(peer: dict[str, Any], namespace: str | None) -> bool:
    if "ipBlock" in peer:
        return namespace is None and not peer["ipBlock"].get("except")
    if peer.get("podSelector"):
        return False  # only some pods of the namespace: not a whole dependency
    selector = peer.get("namespaceSelector")
    if selector is None:
        return False  # a podSelector alone: the policy's own namespace only
    labels = selector.get("matchLabels") or {}
    if not labels:
        return namespace is not None  # every namespace
    return namespace is not None and labels == {NS_LABEL: namespace}


def egress_allows(
    policies: list[dict[str, Any]], labels: dict[str, str], dest: Destination
) -> bool:
    selecting = [
        p
        for p in policies
        if _selects(p, labels) and "Egress" in (p["spec"].get("policyTypes") or [])
    ]
    if not selecting:
        return True  # no egress policy: everything is allowed
    for policy in selecting:
        for rule in policy["spec"].get("egress") or []:
            ports = rule.get("ports") or []
            port_ok = not ports or any(
                p.get("port") == dest.port and p.get("protocol", "TCP") == dest.protocol
                for p in ports
            )
            peers = rule.get("to") or []
            if port_ok and (not peers or any(_peer_allows(peer, dest.namespace) for peer in peers)):
                return True
    return False


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_every_configured_dependency_is_reachable_through_the_egress_rules(overlay: str) -> None:
    objects = render(_directory(overlay))
    policies = [o for o in objects if o["kind"] == "NetworkPolicy"]
    assert policies, f"{overlay} ships no NetworkPolicy"
    labels = _bot_labels(objects)
    blocked = [d for d in dependencies(overlay, objects) if not egress_allows(policies, labels, d)]
    assert blocked == []


def test_the_ha_overlay_needs_its_store_policy() -> None:
    objects = render(_directory("ha"))
    policies = [o for o in objects if o["kind"] == "NetworkPolicy"]
    store = [d for d in dependencies("ha", objects) if d.what == "PostgreSQL store"]
    assert store and store[0].port == 5432
    without = [p for p in policies if p["metadata"]["name"] != "gpunode-store"]
    assert not egress_allows(without, _bot_labels(objects), store[0])
    assert egress_allows(policies, _bot_labels(objects), store[0])


def test_openshift_resolves_names_through_openshift_dns_and_takes_slack_from_its_router() -> None:
    objects = render(_directory("openshift"))
    policy = find(objects, "NetworkPolicy", "gpunode")
    labels = _bot_labels(objects)
    assert egress_allows([policy], labels, Destination("DNS", "openshift-dns", 5353, "UDP"))
    assert not egress_allows([policy], labels, Destination("DNS", "kube-system", 53, "UDP"))
    sources = {
        peer["namespaceSelector"]["matchLabels"][NS_LABEL]
        for rule in policy["spec"]["ingress"]
        for peer in rule["from"]
    }
    assert "openshift-ingress" in sources and "ingress-nginx" not in sources


def test_a_port_nobody_opened_is_blocked() -> None:
    objects = render(_directory("base"))
    policies = [o for o in objects if o["kind"] == "NetworkPolicy"]
    assert not egress_allows(policies, _bot_labels(objects), Destination("Redis", None, 6379))
    elsewhere = Destination("Prometheus elsewhere", "observability", 9090)
    assert not egress_allows(policies, _bot_labels(objects), elsewhere)
