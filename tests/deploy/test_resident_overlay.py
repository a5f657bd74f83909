"""deploy/overlays/daemonset: the bot creates no Job, the agent may only review tokens, and the
agent's pod has the diagnostic Job's privileges and no more (read-only, non-root, the same
read-only host mounts), with limits; the bot's and the agent's halves of the mutual
authentication name each other (audience, identity, certificate). Schema validation of
every object: tests/deploy/test_manifests.py (target ``daemonset``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from bot.config import KubeSettings, load_settings
from bot.kube import jobs, selfcheck
from bot.kube.permissions import AGENT_CALLS, api_calls
from gpunode_sandbox.kubesim.kustomize import find, render

ROOT = Path(__file__).resolve().parents[2]
OVERLAY = ROOT / "deploy" / "overlays" / "daemonset"


@pytest.fixture(scope="module")
def objects() -> list[dict[str, Any]]:
    return render(OVERLAY)


def _rules_of(objects: list[dict[str, Any]], account: str) -> dict[str, list[dict[str, Any]]]:
    """The rules bound to ServiceAccount gpunode/``account``: cluster-wide and namespaced."""
    roles = {(o["kind"], o["metadata"]["name"]): o for o in objects if o["kind"].endswith("Role")}
    out: dict[str, list[dict[str, Any]]] = {"cluster": [], "own_namespace": []}
    for b in objects:
        if b["kind"] not in ("ClusterRoleBinding", "RoleBinding"):
            continue
        if not any(
            s.get("kind") == "ServiceAccount" and s["name"] == account for s in b["subjects"]
        ):
            continue
        rules = roles[(b["roleRef"]["kind"], b["roleRef"]["name"])]["rules"]
        out["cluster" if b["kind"] == "ClusterRoleBinding" else "own_namespace"] += rules
    return out


def _agent_pod(objects: list[dict[str, Any]]) -> dict[str, Any]:
    return find(objects, "DaemonSet", "gpunode-agent")["spec"]["template"]["spec"]  # type: ignore[no-any-return]


def test_the_bots_grants_are_exactly_the_calls_it_makes_in_daemonset_mode(
    objects: list[dict[str, Any]],
) -> None:
    rules = _rules_of(objects, "gpunode")
    cluster, own = rules["cluster"], rules["cluster"] + rules["own_namespace"]
    calls = api_calls("daemonset")

    assert selfcheck.missing_grants(cluster, own, calls) == []
    assert selfcheck.extra_grants(cluster, own, (), calls) == []


def test_the_bot_may_not_create_jobs_nor_read_pod_logs_in_daemonset_mode(
    objects: list[dict[str, Any]],
) -> None:
    rules = _rules_of(objects, "gpunode")
    granted = {
        (g, r, v)
        for rule in rules["cluster"] + rules["own_namespace"]
        for g in rule["apiGroups"]
        for r in rule["resources"]
        for v in rule["verbs"]
    }

    assert ("batch", "jobs", "create") not in granted
    assert ("", "pods/log", "get") not in granted
    assert not any(v in ("*",) or r == "*" for _, r, v in granted)


def test_the_agent_may_only_create_token_reviews(objects: list[dict[str, Any]]) -> None:
    rules = _rules_of(objects, "gpunode-agent")
    granted = [
        (g, r, v)
        for rule in rules["cluster"] + rules["own_namespace"]
        for g in rule["apiGroups"]
        for r in rule["resources"]
        for v in rule["verbs"]
    ]

    assert granted == [(c.api_group, c.resource, c.verb) for c in AGENT_CALLS]


def test_the_agents_pod_is_read_only_non_root_and_limited(objects: list[dict[str, Any]]) -> None:
    pod = _agent_pod(objects)
    (container,) = pod["containers"]
    sc = container["securityContext"]

    assert sc["readOnlyRootFilesystem"] is True
    assert sc["runAsNonRoot"] is True and sc["allowPrivilegeEscalation"] is False
    assert sc["privileged"] is False
    assert sc["capabilities"] == {"drop": ["ALL"], "add": ["SYSLOG"]}
    assert pod["securityContext"]["runAsUser"] == 65534
    assert not pod.get("hostIPC") and not pod.get("initContainers")
    assert (
        container["resources"]["limits"]["memory"] == container["resources"]["requests"]["memory"]
    )
    assert "cpu" in container["resources"]["limits"]
    assert container["command"][:5] == ["python", "-I", "-m", "bot", "agent"]
    assert pod["automountServiceAccountToken"] is False


def test_the_agent_has_the_jobs_host_mounts_and_privileges_and_no_more(
    objects: list[dict[str, Any]],
) -> None:
    job = jobs.build_job(KubeSettings(), "gpu-node-01", "abc123")["spec"]["template"]["spec"]
    pod = _agent_pod(objects)
    (job_container,), (container,) = job["containers"], pod["containers"]

    def host(spec: dict[str, Any]) -> list[Any]:
        return sorted((v["name"], v["hostPath"]) for v in spec["volumes"] if "hostPath" in v)

    def mounts(c: dict[str, Any], spec: dict[str, Any]) -> list[Any]:
        hostpaths = {v["name"] for v in spec["volumes"] if "hostPath" in v}
        return sorted(
            (m["name"], m["mountPath"], m.get("readOnly"))
            for m in c["volumeMounts"]
            if m["name"] in hostpaths
        )

    assert host(pod) == host(job)
    assert mounts(container, pod) == mounts(job_container, job)
    assert all(ro is True for *_, ro in mounts(container, pod))
    assert container["securityContext"] == job_container["securityContext"]
    assert pod["securityContext"] == job["securityContext"]
    for key in ("hostPID", "hostNetwork", "hostIPC"):
        assert pod.get(key) == job.get(key), key
    assert not any("subPath" in m for m in container["volumeMounts"])


def test_the_bot_and_the_agent_name_each_other(objects: list[dict[str, Any]]) -> None:
    (container,) = _agent_pod(objects)["containers"]
    args = dict(zip(container["command"][5::2], container["command"][6::2], strict=False))
    bot = find(objects, "Deployment", "gpunode")["spec"]["template"]["spec"]
    env = {e["name"]: e.get("value") for e in bot["containers"][0]["env"]}
    env["GPUNODE_KUBE__NAMESPACE"] = "gpunode"
    kube = load_settings({k: v for k, v in env.items() if isinstance(v, str)}).kube
    volumes = {v["name"]: v for v in bot["volumes"]}
    projected = volumes["agent-token"]["projected"]["sources"][0]["serviceAccountToken"]
    agent_tls = {v["name"]: v for v in _agent_pod(objects)["volumes"]}["agent-tls"]

    assert kube.collector_mode == "daemonset"
    assert args["--allow"] == f"system:serviceaccount:gpunode:{bot['serviceAccountName']}"
    assert args["--audience"] == projected["audience"] == "gpunode-agent"
    assert int(args["--port"]) == kube.agent_port
    assert kube.agent_daemonset == "gpunode-agent"
    assert volumes["agent-ca"]["secret"]["secretName"] == agent_tls["secret"]["secretName"]
    assert kube.agent_ca_file.startswith("/etc/gpunode/agent-tls/")
    assert kube.agent_token_file == "/var/run/secrets/gpunode/agent/" + projected["path"]
    assert projected["expirationSeconds"] <= 3600
