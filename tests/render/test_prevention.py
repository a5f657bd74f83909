from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from bot.core.model.cluster import ClusterView, NodeInfo, PodInfo
from bot.core.remedies.prevention import kube_reserved_bytes, prevention_params
from bot.render.prevention import KIT_FILES, kit_message, render_prevention_kit
from bot.slack.blockkit import validate_blocks
from tests.schemas import validate_strict

GiB = 1024**3
VERSIONS = ("1.31.0", "1.37.0")


def _view() -> ClusterView:
    def pod(ns: str, name: str, gpus: int, req: int, lim: int | None) -> PodInfo:
        return PodInfo(
            namespace=ns,
            name=name,
            uid=name,
            gpu_request=gpus,
            memory_request_bytes=req,
            memory_limit_bytes=lim,
        )

    return ClusterView(
        node=NodeInfo(
            name="gpu-node-01",
            capacity={"memory": "263174212Ki", "nvidia.com/gpu": "8", "cpu": "64"},
            allocatable={"memory": "250Gi", "nvidia.com/gpu": "8"},
            gpu_product="NVIDIA-A100-SXM4-80GB",
        ),
        pods=[
            pod("ml", "train-0", 4, 16 * GiB, 16 * GiB),
            pod("ml", "train-1", 4, 16 * GiB, 16 * GiB),
            pod("ml", "preprocess-7d9f", 0, 32 * GiB, 64 * GiB),
            pod("research", "notebook-0", 0, 2 * GiB, None),
            pod("kube-system", "nvidia-device-plugin", 0, 0, None),
        ],
    )


def test_quotas_cover_only_namespaces_with_gpu_pods_with_their_current_gpu_requests() -> None:
    p = prevention_params(_view())
    assert [q.namespace for q in p.namespaces] == ["ml"]
    ml = p.namespaces[0]
    assert (ml.gpu_pods, ml.gpu_requests, ml.quota_gpu) == (2, 8, 8)
    assert ml.quota_memory_requests == "80Gi"  # 64 GiB requested x 1.25
    assert ml.quota_memory_limits == "120Gi"  # 96 GiB limits x 1.25


def test_kubelet_reservations_follow_the_tiered_rule_for_the_node_capacity() -> None:
    assert kube_reserved_bytes(4 * GiB) == GiB
    assert abs(kube_reserved_bytes(251 * GiB) / GiB - 11.78) < 0.01
    k = prevention_params(_view()).kubelet
    assert k.capacity_memory_bytes == 263174212 * 1024
    assert k.eviction_hard_memory == "2571Mi" and k.eviction_soft_memory == "5141Mi"


@pytest.fixture(scope="module")
def kit() -> dict[str, str]:
    return render_prevention_kit(_view(), locale="en")


def test_the_kit_has_every_file_and_they_parse_as_yaml(kit: dict[str, str]) -> None:
    assert set(kit) == {*KIT_FILES, "README.md"}
    for name in KIT_FILES:
        docs = [d for d in yaml.safe_load_all(kit[name]) if d is not None]
        assert docs, name


@pytest.mark.parametrize("version", VERSIONS)
def test_quota_and_limitrange_validate_against_the_official_schemas(
    kit: dict[str, str], version: str
) -> None:
    for name in ("resourcequota.yaml", "limitrange.yaml"):
        for doc in yaml.safe_load_all(kit[name]):
            if doc is not None:
                validate_strict(doc, version)
    quota = next(d for d in yaml.safe_load_all(kit["resourcequota.yaml"]) if d)
    assert quota["spec"]["hard"]["requests.nvidia.com/gpu"] == "8"
    assert quota["metadata"]["namespace"] == "ml"


def test_the_kit_does_not_repeat_the_common_wrong_advice(kit: dict[str, str]) -> None:
    yaml_text = "\n".join(kit[n] for n in KIT_FILES)
    assert "ClusterResourceQuota" not in "".join(
        line for line in yaml_text.splitlines() if not line.lstrip().startswith("#")
    )
    assert "node_memory_SUnreclaim_bytes / node_memory_MemTotal_bytes > 0.3" in yaml_text
    assert "node_memory_SUnreclaim " not in yaml_text and "node_memory_SUnreclaim/" not in yaml_text
    assert "HighMemoryUtilization" not in yaml_text
    assert "tcp_mem" not in yaml_text
    policy = yaml.safe_load(kit["descheduler-policy.yaml"])
    assert policy["apiVersion"] == "descheduler/v1alpha2" and policy["kind"] == "DeschedulerPolicy"
    assert policy["profiles"][0]["plugins"]["balance"]["enabled"] == ["LowNodeUtilization"]
    assert "by default, computed" in kit["descheduler-policy.yaml"]
    assert "HighNodeUtilization is the opposite" in kit["descheduler-policy.yaml"]
    kubelet = yaml.safe_load(kit["kubelet-config.yaml"])
    assert kubelet["kind"] == "KubeletConfiguration"
    assert kubelet["evictionHard"]["memory.available"] == "2571Mi"
    assert kubelet["evictionSoftGracePeriod"] == {"memory.available": "1m30s"}
    assert kubelet["mergeDefaultEvictionSettings"] is True
    assert kubelet["kubeReserved"]["memory"] and kubelet["systemReserved"]["memory"]
    readme = kit["README.md"]
    for needle in ("memory-pressure", "quota.openshift.io/v1", "pages", "v1alpha2"):
        assert needle in readme


@pytest.mark.skipif(
    shutil.which("promtool") is None, reason="promtool not installed (run `make system-deps`)"
)
def test_the_prometheus_rule_passes_promtool(kit: dict[str, str], tmp_path: Path) -> None:
    rule = yaml.safe_load(kit["prometheusrule.yaml"])
    path = tmp_path / "rules.yml"
    path.write_text(yaml.safe_dump({"groups": rule["spec"]["groups"]}), encoding="utf-8")
    result = subprocess.run(
        ["promtool", "check", "rules", str(path)], capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_every_computed_value_in_the_manifests_is_explained_with_its_evidence(
    kit: dict[str, str],
) -> None:
    explained = kit["README.md"].split("## Every value and the evidence behind it", 1)[1]
    quota = next(d for d in yaml.safe_load_all(kit["resourcequota.yaml"]) if d)
    for key, value in quota["spec"]["hard"].items():
        assert f"`{key}: {value}` in ml" in explained
    limits = next(d for d in yaml.safe_load_all(kit["limitrange.yaml"]) if d)["spec"]["limits"][0]
    assert f"`defaultRequest.memory: {limits['defaultRequest']['memory']}`" in explained
    assert f"`default.memory: {limits['default']['memory']}`" in explained
    assert "median memory request of the 4 pods on gpu-node-01" in explained
    kubelet = yaml.safe_load(kit["kubelet-config.yaml"])
    for line in (
        f"`kubeReserved.memory: {kubelet['kubeReserved']['memory']}`",
        f"`systemReserved.memory: {kubelet['systemReserved']['memory']}`",
        f"`evictionHard memory.available: {kubelet['evictionHard']['memory.available']}`",
        f"`evictionSoft memory.available: {kubelet['evictionSoft']['memory.available']}`",
    ):
        assert line in explained
    assert "251.0 GiB (Node status.capacity)" in explained  # the evidence number
    policy = yaml.safe_load(kit["descheduler-policy.yaml"])
    args = policy["profiles"][0]["pluginConfig"][1]["args"]
    assert f"memory {args['thresholds']['memory']}%" in explained
    assert f"memory {args['targetThresholds']['memory']}%" in explained


def test_a_node_without_gpu_pods_gets_no_quota_and_says_so() -> None:
    view = _view()
    cpu_only = view.model_copy(update={"pods": [p for p in view.pods if p.gpu_request == 0]})
    files = render_prevention_kit(cpu_only, locale="en")
    assert [d for d in yaml.safe_load_all(files["resourcequota.yaml"]) if d] == []
    assert (
        "No ResourceQuota or LimitRange: no namespace runs GPU pods on gpu-node-01"
        in (files["README.md"])
    )


def test_the_kit_message_fits_slacks_limits_even_with_many_gpu_namespaces() -> None:
    view = _view()
    many = [
        p.model_copy(update={"namespace": f"team-{i:02d}", "uid": f"u{i}", "name": f"t-{i}"})
        for i in range(40)
        for p in view.pods[:1]
    ]
    params = prevention_params(view.model_copy(update={"pods": many}))
    assert len(params.namespaces) == 40
    _, blocks = kit_message(params, None, locale="en")
    validate_blocks(blocks)
    assert "README.md below" in json.dumps(blocks)  # the cut is said, not silent
    assert blocks[-1]["type"] == "context"  # the files-follow note is always kept
