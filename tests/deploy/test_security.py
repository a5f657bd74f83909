"""The deployment grants only what gpunode needs and runs locked down.

The RBAC table below is the "Permissions" list of the README, one row per rule; changing a
role means changing this table and the README together.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.deploy.kustomizing import find, grants, render

REPO = Path(__file__).resolve().parents[2]
DEPLOY = REPO / "deploy"
BASE = DEPLOY / "base"

CLUSTER_RULES = {
    # the owner informers (controllers and budgets, list then watch) read, never write more
    ("", "nodes"): {"get", "list", "watch", "patch"},
    ("", "pods"): {"get", "list", "watch"},
    ("", "pods/eviction"): {"create"},
    ("", "pods/resize"): {"patch"},
    ("", "events"): {"list", "watch"},
    ("apps", "deployments"): {"get", "list", "watch", "patch"},
    ("apps", "statefulsets"): {"get", "list", "watch", "patch"},
    ("apps", "replicasets"): {"get", "list", "watch"},
    ("apps", "daemonsets"): {"get", "list", "watch", "patch"},
    ("batch", "jobs"): {"get", "list", "watch"},
    ("batch", "cronjobs"): {"get", "list", "watch"},
    ("", "replicationcontrollers"): {"get"},
    ("scheduling.k8s.io", "priorityclasses"): {"get", "list", "create"},
    ("policy", "poddisruptionbudgets"): {"list", "watch"},
    ("metrics.k8s.io", "pods"): {"list"},
    ("node.k8s.io", "runtimeclasses"): {"get"},
    ("resource.k8s.io", "resourceslices"): {"list"},
    ("resource.k8s.io", "resourceclaims"): {"list"},
    ("discovery.k8s.io", "endpointslices"): {"list"},
    ("autoscaling.k8s.io", "verticalpodautoscalers"): {"list"},
    # a restarted Kueue workload re-enters admission: is quota left in its queue?
    ("kueue.x-k8s.io", "localqueues"): {"get"},
    ("", "persistentvolumeclaims"): {"get"},
    ("", "persistentvolumes"): {"get"},
    ("kueue.x-k8s.io", "clusterqueues"): {"get"},
    # ... and its Workload's admission and PodsReady
    ("kueue.x-k8s.io", "workloads"): {"list"},
    # a required pod (anti-)affinity term's namespaceSelector: the namespaces' labels
    ("", "namespaces"): {"list"},
    # an autoscaler pool with no node yet (Karpenter NodePools)
    ("karpenter.sh", "nodepools"): {"list"},
    ("cluster.x-k8s.io", "machinedeployments"): {"list"},
    ("cluster.x-k8s.io", "machinesets"): {"list"},
    # gpunode doctor: the admission policies are installed and bound (read only)
    ("admissionregistration.k8s.io", "validatingadmissionpolicies"): {"list"},
    ("admissionregistration.k8s.io", "validatingadmissionpolicybindings"): {"list"},
}
NAMESPACED_RULES = {
    ("batch", "jobs"): {"create", "delete"},
    ("", "pods"): {"watch"},
    ("", "pods/log"): {"get"},
    ("", "events"): {"create"},  # the audit anchors, on the bot's own Deployment
}


def _roles() -> list[dict[str, Any]]:
    return [o for o in render(BASE) if o["kind"] in ("Role", "ClusterRole")]


def test_cluster_role_grants_exactly_the_documented_rules() -> None:
    assert grants(find(render(BASE), "ClusterRole", "gpunode")) == CLUSTER_RULES


def test_namespaced_role_grants_exactly_the_documented_rules_in_gpunode_only() -> None:
    role = find(render(BASE), "Role", "gpunode-diagnostics")
    assert role["metadata"]["namespace"] == "gpunode"
    assert grants(role) == NAMESPACED_RULES


@pytest.mark.parametrize("field", ["apiGroups", "resources", "verbs"])
def test_no_role_uses_wildcards(field: str) -> None:
    for role in _roles():
        for rule in role["rules"]:
            assert "*" not in rule[field], f"{role['metadata']['name']}: wildcard in {field}"


def test_no_role_can_touch_secrets_or_rbac_or_escalate() -> None:
    for role in _roles():
        for (group, resource), verbs in grants(role).items():
            assert resource != "secrets"
            assert group != "rbac.authorization.k8s.io"
            assert not verbs & {"escalate", "bind", "impersonate", "deletecollection"}
            assert resource != "pods" or verbs <= {"get", "list", "watch"}, "no pod create/exec"


def test_the_collector_account_has_no_token_and_no_binding() -> None:
    objects = render(BASE)
    collector = find(objects, "ServiceAccount", "gpunode-collector")
    assert collector["automountServiceAccountToken"] is False
    for binding in (o for o in objects if o["kind"] in ("RoleBinding", "ClusterRoleBinding")):
        assert all(s["name"] != "gpunode-collector" for s in binding["subjects"])


def test_bindings_give_the_roles_to_the_bot_account_only() -> None:
    objects = render(BASE)
    for binding in (o for o in objects if o["kind"] in ("RoleBinding", "ClusterRoleBinding")):
        assert binding["subjects"] == [
            {"kind": "ServiceAccount", "name": "gpunode", "namespace": "gpunode"}
        ]


def test_bot_runs_non_root_read_only_with_no_capabilities() -> None:
    pod = find(render(BASE), "Deployment", "gpunode")["spec"]["template"]["spec"]
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["securityContext"]["runAsUser"] >= 10000
    assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    assert not pod.get("hostPID") and not pod.get("hostNetwork")
    for container in pod["containers"]:
        ctx = container["securityContext"]
        assert ctx["readOnlyRootFilesystem"] is True
        assert ctx["allowPrivilegeEscalation"] is False
        assert ctx["capabilities"] == {"drop": ["ALL"]}
        assert not ctx.get("privileged")
        assert "memory" in container["resources"]["limits"]


# Slack tokens (xoxb-/xoxp-/xapp-), and long base64/hex blobs that look like real secrets.
# a long base64-ish run counts only with a digit in it: Kubernetes field names such as
# requiredDuringSchedulingIgnoredDuringExecution are long words, not tokens
REAL_LOOKING = re.compile(
    r"xox[abposr]-\d+-|xapp-\d-|[A-Fa-f0-9]{32,}|(?=[A-Za-z+/]*\d)[A-Za-z0-9+/]{40,}"
)


def _deploy_yaml_documents() -> list[tuple[Path, dict[str, Any]]]:
    docs = []
    for path in sorted(DEPLOY.rglob("*.y*ml")):
        for doc in yaml.safe_load_all(path.read_text(encoding="utf-8")):
            if isinstance(doc, dict):
                docs.append((path, doc))
    return docs


def test_secrets_in_deploy_hold_placeholders_only() -> None:
    secrets = [(p, d) for p, d in _deploy_yaml_documents() if d.get("kind") == "Secret"]
    assert secrets, "secret.example.yaml should document the keys"
    for path, secret in secrets:
        assert not secret.get("data"), f"{path}: use stringData placeholders, not data"
        for key, value in secret["stringData"].items():
            assert re.fullmatch(r"<[^<>]+>", value), f"{path}: {key} is not a <placeholder>"
    keys = set(secrets[0][1]["stringData"])
    assert {
        "GPUNODE_SLACK__BOT_TOKEN",
        "GPUNODE_SLACK__SIGNING_SECRET",
        "GPUNODE_SLACK__APP_TOKEN",
    } <= keys


def test_no_file_in_deploy_contains_a_real_looking_token() -> None:
    for path in sorted(p for p in DEPLOY.rglob("*") if p.is_file()):
        text = path.read_text(encoding="utf-8")
        match = REAL_LOOKING.search(text)
        assert match is None, f"{path}: {match.group(0) if match else ''}"


def test_the_token_detector_recognises_a_real_looking_token() -> None:
    assert REAL_LOOKING.search("GPUNODE_SLACK__BOT_TOKEN: xoxb-1234-5678-abcdef")
    assert REAL_LOOKING.search("signing: 8f14e45fceea167a5a36dedd4bea2543")
    assert not REAL_LOOKING.search('GPUNODE_SLACK__BOT_TOKEN: "<xoxb-bot-token>"')


def test_the_secret_example_and_the_readme_make_the_alert_token_required() -> None:
    example = (BASE / "secret.example.yaml").read_text(encoding="utf-8")
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    create = readme[readme.index("kubectl -n gpunode create secret") :].split("```", 1)[0]

    assert "--from-literal=GPUNODE_HTTP__ALERTMANAGER_TOKEN" in example
    assert "Required for alert intake" in example and "Optional" not in example
    assert "GPUNODE_HTTP__ALERTMANAGER_TOKEN" in create and "optional" not in create.lower()
    assert "disabled (404)" in readme
