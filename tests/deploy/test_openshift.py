"""deploy/overlays/openshift: the SecurityContextConstraints the diagnostic pod needs, checked
against a JSON schema written from OpenShift's API reference (kubernetes-validate has none) and
field by field against what the diagnostic Job actually asks for."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from bot.config import KubeSettings
from bot.kube.jobs import build_job
from tests.deploy.kustomizing import find, render

REPO = Path(__file__).resolve().parents[2]
OVERLAY = REPO / "deploy" / "overlays" / "openshift"
SCHEMA = json.loads(
    (REPO / "deploy" / "schemas" / "securitycontextconstraints.schema.json").read_text()
)


def _scc() -> dict[str, Any]:
    return find(render(OVERLAY), "SecurityContextConstraints", "gpunode-collector")


def test_the_scc_matches_openshifts_schema() -> None:
    jsonschema.Draft202012Validator.check_schema(SCHEMA)
    jsonschema.Draft202012Validator(SCHEMA).validate(_scc())


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"allowHostPID": "yes"}, "allowHostPID"),
        ({"runAsUser": {"type": "RunAsRoot"}}, "runAsUser"),
        ({"volumes": ["hostpath"]}, "volumes"),
        ({"allowPrivileged": True}, "allowPrivileged"),
    ],
)
def test_the_schema_rejects_a_malformed_scc(change: dict[str, Any], field: str) -> None:
    scc = {**_scc(), **change}
    with pytest.raises(jsonschema.ValidationError, match=field):
        jsonschema.Draft202012Validator(SCHEMA).validate(scc)


def test_the_scc_allows_exactly_what_the_diagnostic_pod_uses() -> None:
    scc = _scc()
    pod = build_job(KubeSettings(nvidia_runtime_class="nvidia"), "gpu-node-01", "abc123")
    spec = pod["spec"]["template"]["spec"]
    container = spec["containers"][0]
    volume_kinds = {k for v in spec["volumes"] for k in v if k != "name"}

    assert set(scc["volumes"]) == volume_kinds == {"hostPath", "emptyDir"}
    assert scc["allowHostPID"] is spec["hostPID"] is True
    assert scc["allowHostDirVolumePlugin"] is True
    assert all(m["readOnly"] for m in container["volumeMounts"] if m["name"].startswith("host-"))
    assert scc["allowPrivilegedContainer"] is False and scc["allowHostIPC"] is False
    assert scc["allowHostPorts"] is False and scc["allowPrivilegeEscalation"] is False
    caps = container["securityContext"]["capabilities"]
    assert caps == {"drop": ["ALL"], "add": ["SYSLOG"]}
    assert scc["requiredDropCapabilities"] == ["ALL"] and scc["allowedCapabilities"] == caps["add"]
    assert scc["readOnlyRootFilesystem"] is container["securityContext"]["readOnlyRootFilesystem"]
    assert scc["runAsUser"]["type"] == "MustRunAsNonRoot" and spec["securityContext"]["runAsUser"]
    assert spec["securityContext"]["seccompProfile"]["type"] == "RuntimeDefault"
    assert scc["seccompProfiles"] == ["runtime/default"]
    assert scc["users"] == [] and scc["groups"] == []


def test_only_the_collectors_service_account_may_use_the_scc() -> None:
    objects = render(OVERLAY)
    role = find(objects, "ClusterRole", "gpunode-collector-scc")
    assert role["rules"] == [
        {
            "apiGroups": ["security.openshift.io"],
            "resources": ["securitycontextconstraints"],
            "resourceNames": ["gpunode-collector"],
            "verbs": ["use"],
        }
    ]
    binding = find(objects, "RoleBinding", "gpunode-collector-scc")
    assert binding["metadata"]["namespace"] == "gpunode"
    assert binding["subjects"] == [
        {"kind": "ServiceAccount", "name": "gpunode-collector", "namespace": "gpunode"}
    ]
    uses = [
        o
        for o in objects
        if o["kind"] in ("ClusterRole", "Role")
        and any("securitycontextconstraints" in r.get("resources", []) for r in o["rules"])
    ]
    assert [o["metadata"]["name"] for o in uses] == ["gpunode-collector-scc"]


def test_the_bot_pod_takes_its_uid_from_the_namespace_range_on_openshift() -> None:
    deployment = find(render(OVERLAY), "Deployment", "gpunode")
    security = deployment["spec"]["template"]["spec"]["securityContext"]
    assert not {"runAsUser", "runAsGroup", "fsGroup"} & set(security)
    assert security["runAsNonRoot"] is True
    namespace = find(render(OVERLAY), "Namespace", "gpunode")
    labels = namespace["metadata"]["labels"]
    assert labels["pod-security.kubernetes.io/enforce"] == "privileged"
    assert labels["security.openshift.io/scc.podSecurityLabelSync"] == "false"
