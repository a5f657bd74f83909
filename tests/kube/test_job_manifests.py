"""The diagnostic Job and every object the remedies send pass strict schema validation
(kubernetes-validate, the oldest and newest supported versions)."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from bot.config import KubeSettings
from bot.kube import draining, jobs, patching, prioritizing
from gpunode_sandbox.kubesim.patching import strategic_merge_patch
from tests.schemas import validate_strict

VERSIONS = ("1.31", "1.37")


def _validate(obj: dict[str, Any]) -> None:
    for version in VERSIONS:
        validate_strict(obj, version)


def _job(**settings: Any) -> dict[str, Any]:
    return jobs.build_job(KubeSettings(**settings), "gpu-node-01", "abc123")


@pytest.mark.parametrize(
    "settings",
    [
        {},
        {"nvidia_runtime_class": None, "nvidia_visible_devices_all": False},
        {"diagnostic_priority_class": "system-node-critical"},
    ],
)
def test_the_diagnostic_job_is_schema_valid(settings: dict[str, Any]) -> None:
    _validate(_job(**settings))


def test_the_diagnostic_job_is_bound_hardened_and_burstable() -> None:
    job = _job(namespace="ops", image="img:1", service_account="sa", job_timeout_s=90, job_ttl_s=60)
    spec = job["spec"]
    pod = spec["template"]["spec"]
    (container,) = pod["containers"]
    assert job["metadata"]["namespace"] == "ops"
    assert (
        spec["activeDeadlineSeconds"],
        spec["backoffLimit"],
        spec["ttlSecondsAfterFinished"],
    ) == (90, 0, 60)
    assert pod["nodeName"] == "gpu-node-01"
    # by key: a sick node's condition taints, the cordon, the GPU taint; never tolerate-all
    keys = [t["key"] for t in pod["tolerations"]]
    assert "node.kubernetes.io/memory-pressure" in keys and "nvidia.com/gpu" in keys
    assert all(t.get("key") and t["operator"] == "Exists" for t in pod["tolerations"])
    # host PID and UTS/network namespaces: host PIDs for NVML, the node's hostname, no CNI
    assert pod["hostPID"] is True and pod["hostNetwork"] is True
    assert pod["dnsPolicy"] == "Default"
    assert "priorityClassName" not in pod
    assert (pod["serviceAccountName"], pod["automountServiceAccountToken"]) == ("sa", False)
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    sc = container["securityContext"]
    assert sc["readOnlyRootFilesystem"] and not sc["allowPrivilegeEscalation"]
    assert sc["capabilities"] == {"drop": ["ALL"], "add": ["SYSLOG"]}  # /dev/kmsg
    assert container["image"] == "img:1"
    assert container["command"] == [
        "python",
        "-I",
        "-S",
        "/opt/gpunode/bot/__main__.py",
        "collect",
        "--root",
        "/host",
        "--format",
        "json",
        "--kernel-log-window",
        "86400",
    ]
    mounts = {m["mountPath"]: m for m in container["volumeMounts"]}
    assert mounts["/host/proc"]["readOnly"] and mounts["/host/sys/fs/cgroup"]["readOnly"]
    hostpaths = {v["hostPath"]["path"] for v in pod["volumes"] if "hostPath" in v}
    assert hostpaths == {"/proc", "/sys/fs/cgroup", "/dev/kmsg"}
    assert mounts["/host/dev/kmsg"]["readOnly"]
    env = {e["name"]: e for e in container["env"]}
    assert env["NODE_NAME"]["valueFrom"]["fieldRef"]["fieldPath"] == "spec.nodeName"
    # GPU evidence is on by default: the NVIDIA runtime injects NVML
    assert env["NVIDIA_VISIBLE_DEVICES"]["value"] == "all" and pod["runtimeClassName"] == "nvidia"
    res = container["resources"]
    # Burstable: memory request == limit, cpu request without a limit
    assert res["requests"]["memory"] == res["limits"]["memory"]
    assert "cpu" in res["requests"] and "cpu" not in res["limits"]
    labels = job["metadata"]["labels"]
    assert labels["app.kubernetes.io/name"] == "gpunode"
    assert labels["gpunode.io/role"] == "diagnostic"
    assert labels["gpunode.io/node"] == "gpu-node-01"


def test_nvidia_runtime_settings_are_on_by_default_and_can_be_turned_off() -> None:
    pod = _job()["spec"]["template"]["spec"]
    env = {e["name"]: e.get("value") for e in pod["containers"][0]["env"]}
    assert pod["runtimeClassName"] == "nvidia"
    assert env["NVIDIA_VISIBLE_DEVICES"] == "all"
    assert env["NVIDIA_DRIVER_CAPABILITIES"] == "utility"
    off = _job(nvidia_runtime_class=None)["spec"]["template"]["spec"]
    assert "runtimeClassName" not in off
    missing = jobs.build_job(KubeSettings(), "gpu-node-01", "abc123", runtime_class=False)
    pod = missing["spec"]["template"]["spec"]
    names = {e["name"] for e in pod["containers"][0]["env"]}
    assert "runtimeClassName" not in pod and "NVIDIA_VISIBLE_DEVICES" not in names


def test_the_optional_priority_class_reaches_the_pod() -> None:
    pod = _job(diagnostic_priority_class="system-node-critical")["spec"]["template"]["spec"]
    assert pod["priorityClassName"] == "system-node-critical"


def test_the_collector_mounts_only_proc_cgroups_and_the_kernel_log_from_the_host() -> None:
    pod = _job()["spec"]["template"]["spec"]
    hostpaths = {v["hostPath"]["path"] for v in pod["volumes"] if "hostPath" in v}
    # never /run (rootfs of every container)
    assert hostpaths == {"/proc", "/sys/fs/cgroup", "/dev/kmsg"}


def test_hostile_node_names_cannot_change_the_manifest() -> None:
    job = jobs.build_job(KubeSettings(), 'x"\n  hostPID: false', "abc123")
    assert job["spec"]["template"]["spec"]["hostPID"] is True
    assert job["spec"]["template"]["spec"]["nodeName"] == 'x"\n  hostPID: false'


def test_long_node_names_give_valid_label_values_and_job_names() -> None:
    node = "gpu-" + "a" * 120 + ".example.internal"
    assert len(jobs.label_value(node)) <= 63
    assert len(jobs.job_name(node, "abc123")) <= 63
    _validate(jobs.build_job(KubeSettings(), node, "abc123"))


@pytest.mark.parametrize("dry_run", [False, True])
def test_eviction_bodies_are_schema_valid(dry_run: bool) -> None:
    _validate(draining.eviction_body("research", "jupyter-alice", dry_run=dry_run))


def test_priority_class_bodies_are_schema_valid() -> None:
    _validate(prioritizing.priority_class_body("gpu-critical", 100000, description="GPU jobs"))


def test_node_patches_apply_to_schema_valid_nodes() -> None:
    node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n"}, "spec": {}}
    for value in (True, False):
        _validate(strategic_merge_patch(copy.deepcopy(node), {"spec": {"unschedulable": value}}))


DEPLOYMENT = {
    "apiVersion": "apps/v1",
    "kind": "Deployment",
    "metadata": {"name": "preprocess", "namespace": "data-prep"},
    "spec": {
        "selector": {"matchLabels": {"app": "p"}},
        "template": {
            "metadata": {"labels": {"app": "p"}},
            "spec": {
                "containers": [
                    {
                        "name": "pandas",
                        "image": "img",
                        "resources": {"requests": {"cpu": "1"}},
                        "env": [{"name": "A", "value": "1"}],
                    },
                    {"name": "side", "image": "img2"},
                ]
            },
        },
    },
}


def test_container_patches_apply_to_schema_valid_controllers() -> None:
    entry = patching.container_patch(
        "pandas", requests={"memory": "64Gi"}, limits={"memory": "64Gi"}, env={"B": "2"}
    )
    patch = {"spec": {"template": {"spec": {"containers": [entry]}}}}
    merged = strategic_merge_patch(copy.deepcopy(DEPLOYMENT), patch)
    _validate(merged)
    pandas = merged["spec"]["template"]["spec"]["containers"][0]
    assert pandas["resources"]["requests"] == {"cpu": "1", "memory": "64Gi"}
    assert [e["name"] for e in pandas["env"]] == ["A", "B"]


def test_priority_class_name_patches_apply_to_schema_valid_controllers() -> None:
    patch = {"spec": {"template": {"spec": {"priorityClassName": "batch-low"}}}}
    _validate(strategic_merge_patch(copy.deepcopy(DEPLOYMENT), patch))
