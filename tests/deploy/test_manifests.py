"""The kustomize base and overlay render, and every object passes the official schemas.

Objects are validated with kubernetes-validate in strict mode (unknown fields rejected)
against the oldest and newest supported Kubernetes versions. The pure-Python renderer in
kustomizing.py is cross-checked against ``kubectl kustomize`` when kubectl is installed.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml

from tests.deploy.kustomizing import KustomizeError, find, render, strategic_merge
from tests.schemas import validate_strict

REPO = Path(__file__).resolve().parents[2]
BASE = REPO / "deploy" / "base"
SOCKET = REPO / "deploy" / "overlays" / "socket-mode"
SOURCES = REPO / "deploy" / "overlays" / "ingress-sources"
OPENSHIFT = REPO / "deploy" / "overlays" / "openshift"
VERSIONS = ("1.31.0", "1.37.0")  # oldest and newest supported (ARCHITECTURE.md)
CRITICAL = REPO / "deploy" / "overlays" / "critical-collector"
HA = REPO / "deploy" / "overlays" / "ha"
MIRROR = REPO / "deploy" / "overlays" / "registry-mirror"
IMPERSONATION = REPO / "deploy" / "overlays" / "impersonation"
DAEMONSET = REPO / "deploy" / "overlays" / "daemonset"
TARGETS = {
    "daemonset": DAEMONSET,
    "impersonation": IMPERSONATION,
    "registry-mirror": MIRROR,
    "ha": HA,
    "base": BASE,
    "socket-mode": SOCKET,
    "ingress-sources": SOURCES,
    "critical-collector": CRITICAL,
    "openshift": OPENSHIFT,
}
#: kinds kubernetes-validate has no schema for; tests/deploy/test_openshift.py checks them
OPENSHIFT_KINDS = {"SecurityContextConstraints"}


def _validate(obj: dict[str, Any], version: str) -> None:
    if obj["kind"] in OPENSHIFT_KINDS:
        return
    validate_strict(obj, version)


def _env(objects: list[dict[str, Any]]) -> dict[str, Any]:
    container = find(objects, "Deployment", "gpunode")["spec"]["template"]["spec"]["containers"]
    return {e["name"]: e.get("value", e.get("valueFrom")) for e in container[0]["env"]}


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("target", sorted(TARGETS))
def test_every_rendered_object_passes_strict_schema_validation(target: str, version: str) -> None:
    objects = render(TARGETS[target])
    assert objects
    for obj in objects:
        _validate(obj, version)


@pytest.mark.parametrize("version", VERSIONS)
def test_the_example_secret_passes_strict_schema_validation(version: str) -> None:
    _validate(yaml.safe_load((BASE / "secret.example.yaml").read_text()), version)


def test_strict_validation_rejects_a_misspelled_field() -> None:
    deployment = find(render(BASE), "Deployment", "gpunode")
    deployment["spec"]["template"]["spec"]["containers"][0]["readOnlyRootFileSystem"] = True
    with pytest.raises(kubernetes_validate.ValidationError):
        _validate(deployment, VERSIONS[0])


def test_base_holds_the_expected_objects_all_in_the_gpunode_namespace() -> None:
    objects = render(BASE)
    kinds = sorted((o["kind"], o["metadata"]["name"]) for o in objects)
    assert kinds == [
        ("ClusterRole", "gpunode"),
        ("ClusterRoleBinding", "gpunode"),
        ("ConfigMap", "gpunode"),
        ("ConfigMap", "gpunode-admission"),
        ("Deployment", "gpunode"),
        ("Namespace", "gpunode"),
        ("NetworkPolicy", "gpunode"),
        ("PersistentVolumeClaim", "gpunode-store"),
        ("Role", "gpunode-diagnostics"),
        ("RoleBinding", "gpunode-diagnostics"),
        ("Service", "gpunode"),
        ("ServiceAccount", "gpunode"),
        ("ServiceAccount", "gpunode-collector"),
        ("ValidatingAdmissionPolicy", "gpunode-controller-template"),
        ("ValidatingAdmissionPolicy", "gpunode-diagnostic-job"),
        ("ValidatingAdmissionPolicy", "gpunode-node-cordon"),
        ("ValidatingAdmissionPolicy", "gpunode-pod-resize"),
        ("ValidatingAdmissionPolicy", "gpunode-priority-class"),
        ("ValidatingAdmissionPolicyBinding", "gpunode-controller-template"),
        ("ValidatingAdmissionPolicyBinding", "gpunode-diagnostic-job"),
        ("ValidatingAdmissionPolicyBinding", "gpunode-node-cordon"),
        ("ValidatingAdmissionPolicyBinding", "gpunode-pod-resize"),
        ("ValidatingAdmissionPolicyBinding", "gpunode-priority-class"),
    ]
    for obj in objects:
        if obj["kind"] not in ("Namespace", "ClusterRole", "ClusterRoleBinding"):
            assert obj["metadata"]["namespace"] == "gpunode", obj["kind"]
        assert obj["metadata"]["labels"]["app.kubernetes.io/part-of"] == "gpunode"


def test_no_secret_is_part_of_the_kustomization() -> None:
    for target in TARGETS.values():
        assert all(o["kind"] != "Secret" for o in render(target))


def test_socket_mode_overlay_drops_the_service_and_all_ingress() -> None:
    objects = render(SOCKET)
    assert all(o["kind"] != "Service" for o in objects)
    policy = find(objects, "NetworkPolicy", "gpunode")["spec"]
    assert "Ingress" in policy["policyTypes"]
    assert not policy.get("ingress")
    assert _env(objects)["GPUNODE_SLACK__SOCKET_MODE"] == "true"


def test_http_mode_base_serves_on_port_3000_behind_the_service() -> None:
    objects = render(BASE)
    assert _env(objects)["GPUNODE_SLACK__SOCKET_MODE"] == "false"
    assert _env(objects)["GPUNODE_HTTP__PORT"] == "3000"
    service = find(objects, "Service", "gpunode")["spec"]
    assert service["ports"][0]["targetPort"] == "http"
    policy = find(objects, "NetworkPolicy", "gpunode")["spec"]
    assert [r["ports"] for r in policy["ingress"]] == [[{"protocol": "TCP", "port": 3000}]]


def _sources(target: Path) -> list[dict[str, Any]]:
    policy = find(render(target), "NetworkPolicy", "gpunode")["spec"]
    assert all(rule.get("from") for rule in policy["ingress"]), "a rule admits every source"
    return [peer for rule in policy["ingress"] for peer in rule["from"]]


def test_port_3000_is_reachable_only_from_the_ingress_and_alertmanager_namespaces() -> None:
    namespaces = [
        p["namespaceSelector"]["matchLabels"]["kubernetes.io/metadata.name"] for p in _sources(BASE)
    ]
    assert namespaces == ["ingress-nginx", "monitoring"]
    assert all(set(p) == {"namespaceSelector"} for p in _sources(BASE))  # no ipBlock


def test_an_overlay_sets_the_admitted_sources_of_its_cluster() -> None:
    peers = _sources(SOURCES)
    assert [p["namespaceSelector"]["matchLabels"] for p in peers] == [
        {"kubernetes.io/metadata.name": "traefik"},
        {"kubernetes.io/metadata.name": "observability"},
    ]
    assert peers[1]["podSelector"] == {"matchLabels": {"app.kubernetes.io/name": "alertmanager"}}


@pytest.mark.parametrize("target", sorted(TARGETS))
def test_the_collector_image_setting_is_the_bots_release_of_the_collector(target: str) -> None:
    objects = render(TARGETS[target])
    container = find(objects, "Deployment", "gpunode")["spec"]["template"]["spec"]["containers"][0]
    repository, _, tag = container["image"].rpartition(":")
    assert _env(objects)["GPUNODE_KUBE__IMAGE"] == f"{repository}-collector:{tag}"


def test_every_env_var_names_a_real_setting() -> None:
    from bot.config import load_settings

    env = {k: v for k, v in _env(render(BASE)).items() if isinstance(v, str)}
    env["GPUNODE_KUBE__NAMESPACE"] = "gpunode"
    settings = load_settings(env)
    assert settings.store.path == "/var/lib/gpunode/gpunode.db"
    assert settings.kube.mode == "in_cluster"
    assert settings.kube.service_account == "gpunode-collector"
    # GPU evidence is shipped on
    assert settings.kube.nvidia_runtime_class == "nvidia"
    assert settings.kube.nvidia_visible_devices_all is True
    assert settings.kube.diagnostic_priority_class is None


def test_the_critical_collector_overlay_sets_the_class_its_quota_allows() -> None:
    from bot.config import load_settings

    objects = render(CRITICAL)
    env = {k: v for k, v in _env(objects).items() if isinstance(v, str)}
    settings = load_settings({**env, "GPUNODE_KUBE__NAMESPACE": "gpunode"})
    quota = find(objects, "ResourceQuota", "gpunode-critical-collector")
    assert quota["metadata"]["namespace"] == "gpunode"
    (expr,) = quota["spec"]["scopeSelector"]["matchExpressions"]
    assert (expr["scopeName"], expr["operator"]) == ("PriorityClass", "In")
    assert settings.kube.diagnostic_priority_class in expr["values"]


def test_probes_hit_healthz_and_readyz_on_the_http_port() -> None:
    container = find(render(BASE), "Deployment", "gpunode")["spec"]["template"]["spec"][
        "containers"
    ][0]
    assert container["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "http"}
    assert container["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "http"}
    assert container["ports"] == [
        {"name": "http", "containerPort": 3000, "protocol": "TCP"},
        {"name": "metrics", "containerPort": 9095, "protocol": "TCP"},  # deploy/monitoring
    ]


def test_store_lives_on_a_persistent_volume_with_a_single_writer() -> None:
    objects = render(BASE)
    deployment = find(objects, "Deployment", "gpunode")["spec"]
    volumes = {v["name"]: v for v in deployment["template"]["spec"]["volumes"]}
    assert volumes["store"]["persistentVolumeClaim"]["claimName"] == "gpunode-store"
    assert deployment["replicas"] == 1
    assert deployment["strategy"]["type"] == "Recreate"
    find(objects, "PersistentVolumeClaim", "gpunode-store")


def test_strategic_merge_merges_env_by_name_and_deletes_on_null() -> None:
    base = {"env": [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}], "x": 1}
    merged = strategic_merge(base, {"env": [{"name": "B", "value": "3"}], "x": None})
    assert merged == {"env": [{"name": "A", "value": "1"}, {"name": "B", "value": "3"}]}


def test_renderer_refuses_kustomize_features_it_does_not_implement(tmp_path: Path) -> None:
    (tmp_path / "kustomization.yaml").write_text("configMapGenerator: []\n")
    with pytest.raises(KustomizeError):
        render(tmp_path)


def _normalize(value: Any) -> Any:
    """Make list order irrelevant where kustomize reorders merged keyed lists."""
    if isinstance(value, dict):
        return {k: _normalize(v) for k, v in value.items()}
    if isinstance(value, list):
        items = [_normalize(v) for v in value]
        if all(isinstance(v, dict) and "name" in v for v in items):
            return sorted(items, key=lambda v: str(v["name"]))
        return items
    return value


def _keyed(objects: list[dict[str, Any]]) -> dict[tuple[str, str, str], Any]:
    return {
        (o["kind"], o["metadata"].get("namespace", ""), o["metadata"]["name"]): _normalize(o)
        for o in objects
    }


@pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl not installed")
@pytest.mark.parametrize("target", sorted(TARGETS))
def test_pure_python_render_equals_kubectl_kustomize(target: str) -> None:
    out = subprocess.run(
        ["kubectl", "kustomize", str(TARGETS[target])],
        check=True,
        capture_output=True,
        text=True,
        timeout=60,
    ).stdout
    expected = [d for d in yaml.safe_load_all(out) if d]
    assert _keyed(render(TARGETS[target])) == _keyed(expected)


def test_configmap_policy_parses_and_binds_nobody() -> None:
    from bot.core.governance.policy import parse_policy

    data = find(render(BASE), "ConfigMap", "gpunode")["data"]
    policy = parse_policy(yaml.safe_load(data["policy.yaml"]), source="configmap policy.yaml")
    assert set(policy.roles) == {"viewer", "responder", "approver", "admin"}
    assert not policy.bindings


def test_configmap_thresholds_parse() -> None:
    from bot.core.model.thresholds import parse_thresholds

    data = find(render(BASE), "ConfigMap", "gpunode")["data"]
    thresholds = parse_thresholds(yaml.safe_load(data["thresholds.yaml"]))
    assert thresholds.container_near_limit_ratio == 0.95


def test_mounted_files_are_the_ones_the_settings_point_at() -> None:
    objects = render(BASE)
    data = find(objects, "ConfigMap", "gpunode")["data"]
    env = _env(objects)
    for key in ("GPUNODE_ACTIONS__POLICY_FILE", "GPUNODE_THRESHOLDS_FILE"):
        directory, _, name = env[key].rpartition("/")
        assert directory == "/etc/gpunode"
        assert name in data


def test_the_ha_overlay_runs_two_replicas_rolled_one_at_a_time_on_different_nodes() -> None:
    objects = render(HA)
    spec = find(objects, "Deployment", "gpunode")["spec"]
    assert spec["replicas"] == 2
    assert spec["strategy"] == {
        "type": "RollingUpdate",
        "rollingUpdate": {"maxUnavailable": 0, "maxSurge": 1},
    }
    pod = spec["template"]["spec"]
    (term,) = pod["affinity"]["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    assert term["topologyKey"] == "kubernetes.io/hostname"
    assert term["labelSelector"]["matchLabels"] == spec["selector"]["matchLabels"]
    pdb = find(objects, "PodDisruptionBudget", "gpunode")["spec"]
    assert pdb["minAvailable"] == 1
    assert pdb["selector"]["matchLabels"] == spec["selector"]["matchLabels"]


def test_the_ha_overlay_reads_the_dsn_from_a_secret_and_keeps_no_sqlite_volume() -> None:
    from bot.config import load_settings

    objects = render(HA)
    env = _env(objects)
    assert env["GPUNODE_STORE__DSN"] == {"secretKeyRef": {"name": "gpunode-store", "key": "dsn"}}
    assert "GPUNODE_STORE__PATH" not in env
    assert env["GPUNODE_LEADER__IDENTITY"] == {"fieldRef": {"fieldPath": "metadata.name"}}
    pod = find(objects, "Deployment", "gpunode")["spec"]["template"]["spec"]
    assert "store" not in {v["name"] for v in pod["volumes"]}
    assert "/var/lib/gpunode" not in {m["mountPath"] for m in pod["containers"][0]["volumeMounts"]}
    assert all(o["kind"] != "PersistentVolumeClaim" for o in objects)
    plain = {k: v for k, v in env.items() if isinstance(v, str)}
    settings = load_settings(
        {
            **plain,
            "GPUNODE_KUBE__NAMESPACE": "gpunode",
            "GPUNODE_LEADER__IDENTITY": "pod-a",
            "GPUNODE_STORE__DSN": "postgresql://gpunode:pw@db/gpunode",
        }
    )
    assert settings.store.target == "postgresql://gpunode:pw@db/gpunode"
    assert settings.leader.lease_name == "gpunode-leader"


def test_the_ha_overlay_grants_the_lease_in_its_namespace_only() -> None:
    objects = render(HA)
    role = find(objects, "Role", "gpunode-leader-election")
    assert role["metadata"]["namespace"] == "gpunode"
    lease = _env(objects)["GPUNODE_LEADER__LEASE_NAME"]
    rules = [(r["verbs"], r.get("resourceNames")) for r in role["rules"]]
    assert rules == [(["create"], None), (["get", "update"], [lease])]
    assert all(r["apiGroups"] == ["coordination.k8s.io"] for r in role["rules"])
    assert all(r["resources"] == ["leases"] for r in role["rules"])
    binding = find(objects, "RoleBinding", "gpunode-leader-election")
    assert binding["metadata"]["namespace"] == "gpunode"
    assert binding["roleRef"] == {
        "apiGroup": "rbac.authorization.k8s.io",
        "kind": "Role",
        "name": role["metadata"]["name"],
    }
    assert binding["subjects"] == [
        {"kind": "ServiceAccount", "name": "gpunode", "namespace": "gpunode"}
    ]
    assert not any(
        "leases" in r.get("resources", [])
        for o in objects
        if o["kind"] == "ClusterRole"
        for r in o["rules"]
    )
