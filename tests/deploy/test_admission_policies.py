"""deploy/base's ValidatingAdmissionPolicies, enforced by the stand-in with CEL (cel-python).

What the bot sends passes (the Job exactly as bot/kube/jobs.py renders it, a cordon, its
PriorityClass); every other shape its token could send is denied with the API server's
message; other users are not affected.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from bot.config import KubeSettings
from bot.core.remedies.autoscalers import NODE_PROTECTION
from bot.kube.jobs import build_job
from bot.kube.prioritizing import priority_class_body
from gpunode_sandbox.kubesim import KubeSim
from gpunode_sandbox.kubesim.access import ADMIN_TOKEN, BOT_TOKEN
from tests.conftest import kube_call
from tests.deploy.kustomizing import find, render

Make = Callable[..., Awaitable[KubeSim]]
JOBS = "/apis/batch/v1/namespaces/gpunode/jobs?dryRun=All"
MERGE = "application/merge-patch+json"


def _job(**settings: Any) -> dict[str, Any]:
    return build_job(KubeSettings(**settings), "gpu-node-01", "abc123")


def _pod(job: dict[str, Any]) -> dict[str, Any]:
    return job["spec"]["template"]["spec"]  # type: ignore[no-any-return]


def _c(job: dict[str, Any]) -> dict[str, Any]:
    return _pod(job)["containers"][0]  # type: ignore[no-any-return]


@pytest.mark.parametrize(
    "settings",
    [
        {},
        {"nvidia_runtime_class": "nvidia", "nvidia_visible_devices_all": True},
        {"image": "ghcr.io/gpunode/gpunode-collector:0.2.0-rc.1"},
        {"image": "ghcr.io/gpunode/gpunode-collector@sha256:" + "a" * 64},
    ],
)
async def test_the_diagnostic_job_the_bot_renders_is_admitted(
    make_kubesim: Make, settings: dict[str, Any]
) -> None:
    sim = await make_kubesim("seed")
    status, body = await kube_call(sim.url, "POST", JOBS, token=BOT_TOKEN, body=_job(**settings))
    assert status == 201, body


async def test_a_job_from_a_bot_a_release_behind_that_runs_python_dash_m_bot_is_admitted(
    make_kubesim: Make,
) -> None:
    """Earlier bots render ``python -I -m bot collect``: as isolated, only slower to start.
    Mid-upgrade, a bot a release behind its policy must still be able to diagnose."""
    sim = await make_kubesim("seed")
    job = _job()
    command = _c(job)["command"]
    assert command[2:4] == ["-S", "/opt/gpunode/bot/__main__.py"]
    command[2:4] = ["-m", "bot"]
    status, body = await kube_call(sim.url, "POST", JOBS, token=BOT_TOKEN, body=job)
    assert status == 201, body


def _set(path: str, value: Any) -> Callable[[dict[str, Any]], None]:
    def change(job: dict[str, Any]) -> None:
        *parents, last = path.split(".")
        cur: Any = job
        for p in parents:
            cur = cur[int(p)] if p.isdigit() else cur.setdefault(p, {})
        cur[last] = value

    return change


TEMPLATE = "spec.template.spec"
CONTAINER = f"{TEMPLATE}.containers.0"


def _append(path: str, item: Any) -> Callable[[dict[str, Any]], None]:
    def change(job: dict[str, Any]) -> None:
        cur: Any = job
        for p in path.split("."):
            cur = cur[int(p)] if p.isdigit() else cur[p]
        cur.append(item)

    return change


def _drop(path: str) -> Callable[[dict[str, Any]], None]:
    def change(job: dict[str, Any]) -> None:
        *parents, last = path.split(".")
        cur: Any = job
        for p in parents:
            cur = cur[int(p)] if p.isdigit() else cur[p]
        del cur[last]

    return change


def _command_words(words: dict[int, str]) -> Callable[[dict[str, Any]], None]:
    def change(job: dict[str, Any]) -> None:
        for i, word in words.items():
            _c(job)["command"][i] = word

    return change


SECRET_ENV = {"name": "T", "valueFrom": {"secretKeyRef": {"name": "gpunode-slack", "key": "k"}}}
DENIED = [
    (
        "another image",
        _set(f"{CONTAINER}.image", "alpine:3"),
        "collector image from ghcr.io/gpunode",
    ),
    ("a look-alike image", _set(f"{CONTAINER}.image", "ghcr.io/gpunode/gpunode-x:1"), "image"),
    ("the bot's full image", _set(f"{CONTAINER}.image", "ghcr.io/gpunode/gpunode:0.1.0"), "image"),
    (
        "another command",
        _set(f"{CONTAINER}.command", ["sh", "-c", "id"]),
        "python -I -S /opt/gpunode/bot/__main__.py collect",
    ),
    (
        "another script",
        _command_words({3: "/tmp/collect.py"}),
        "python -I -S /opt/gpunode/bot/__main__.py collect",
    ),
    (
        "site-packages back on the path",
        _command_words({2: "-s"}),
        "python -I -S /opt/gpunode/bot/__main__.py collect",
    ),
    (
        "another module",
        _command_words({2: "-m", 3: "evil"}),
        "python -I -S /opt/gpunode/bot/__main__.py collect",
    ),
    ("extra args", _set(f"{CONTAINER}.args", ["--root", "/"]), "no args"),
    ("a privileged container", _set(f"{CONTAINER}.securityContext.privileged", True), "non-root"),
    (
        "an added capability",
        _set(f"{CONTAINER}.securityContext.capabilities.add", ["SYS_ADMIN"]),
        "all capabilities dropped",
    ),
    ("root", _set(f"{TEMPLATE}.securityContext.runAsUser", 0), "user and group 65534"),
    ("root in the container", _set(f"{CONTAINER}.securityContext.runAsUser", 0), "non-root"),
    (
        "privilege escalation",
        _set(f"{CONTAINER}.securityContext.allowPrivilegeEscalation", True),
        "privilege",
    ),
    ("no securityContext", _drop(f"{CONTAINER}.securityContext"), "securityContext"),
    ("host IPC", _set(f"{TEMPLATE}.hostIPC", True), "hostIPC"),
    (
        "an unconfined AppArmor annotation",
        _set(
            "spec.template.metadata.annotations",
            {"container.apparmor.security.beta.kubernetes.io/collector": "unconfined"},
        ),
        "annotations",
    ),
    (
        "the host root",
        _set(f"{TEMPLATE}.volumes.0.hostPath", {"path": "/", "type": "Directory"}),
        "mounts exactly hostPath /proc",
    ),
    ("a writable host mount", _set(f"{CONTAINER}.volumeMounts.0.readOnly", False), "read-only"),
    (
        "a Secret volume",
        _append(f"{TEMPLATE}.volumes", {"name": "s", "secret": {"secretName": "gpunode-slack"}}),
        "mounts exactly hostPath /proc",
    ),
    (
        "a Secret in the environment",
        _append(f"{CONTAINER}.env", SECRET_ENV),
        "limited to NODE_NAME",
    ),
    ("another service account", _set(f"{TEMPLATE}.serviceAccountName", "default"), "gpunode-coll"),
    ("a mounted token", _set(f"{TEMPLATE}.automountServiceAccountToken", True), "token"),
    ("no nodeName", _drop(f"{TEMPLATE}.nodeName"), "spec.nodeName"),
    ("another runtime class", _set(f"{TEMPLATE}.runtimeClassName", "kata"), "runtime class"),
    (
        "a second container",
        _append(f"{TEMPLATE}.containers", {"name": "x", "image": "alpine:3"}),
        "exactly one container",
    ),
    (
        "an init container",
        _set(f"{TEMPLATE}.initContainers", [{"name": "x", "image": "alpine:3"}]),
        "exactly one container",
    ),
]


@pytest.mark.parametrize(("what", "change", "says"), DENIED, ids=[d[0] for d in DENIED])
async def test_any_other_job_shape_from_the_bot_is_denied_with_the_servers_message(
    make_kubesim: Make, what: str, change: Callable[[dict[str, Any]], None], says: str
) -> None:
    sim = await make_kubesim("seed")
    job = _job()
    change(job)
    status, body = await kube_call(sim.url, "POST", JOBS, token=BOT_TOKEN, body=job)

    assert status == 422 and body["reason"] == "Invalid", body
    name = job["metadata"]["name"]
    assert body["message"].startswith(
        f'jobs.batch "{name}" is forbidden: ValidatingAdmissionPolicy '
        "'gpunode-diagnostic-job' with binding 'gpunode-diagnostic-job' denied request: "
    ), body["message"]
    assert says in body["message"]
    assert body["details"]["causes"][0]["message"] in body["message"]


async def test_the_policies_bind_only_the_bots_service_account(make_kubesim: Make) -> None:
    sim = await make_kubesim("seed")
    job = _job()
    _set(f"{CONTAINER}.image", "alpine:3")(job)

    status, body = await kube_call(sim.url, "POST", JOBS, token=ADMIN_TOKEN, body=job)
    assert status == 201, body


NODE = "/api/v1/nodes/gpu-node-01"
SCALE_DOWN = "cluster-autoscaler.kubernetes.io/scale-down-disabled"
KARPENTER = "karpenter.sh/do-not-disrupt"


@pytest.mark.parametrize(
    ("patch", "allowed"),
    [
        ({"spec": {"unschedulable": True}}, True),
        ({"spec": {"unschedulable": False}}, True),
        ({"metadata": {"labels": {"nvidia.com/gpu.present": "false"}}}, False),
        ({"metadata": {"annotations": {"x": "y"}}}, False),
        # the autoscalers' scale-down protection, set to "true" and removed again
        ({"metadata": {"annotations": {SCALE_DOWN: "true", KARPENTER: "true"}}}, True),
        ({"metadata": {"annotations": {SCALE_DOWN: None, KARPENTER: None}}}, True),
        (
            {"spec": {"unschedulable": True}, "metadata": {"annotations": {SCALE_DOWN: "true"}}},
            True,
        ),
        ({"metadata": {"annotations": {SCALE_DOWN: "false"}}}, False),
        ({"metadata": {"annotations": {KARPENTER: "5m"}}}, False),
        ({"metadata": {"annotations": {SCALE_DOWN: "true", "x": "y"}}}, False),
        ({"metadata": {"annotations": {"cluster-autoscaler.kubernetes.io/x": "true"}}}, False),
        ({"metadata": {"annotations": {KARPENTER: "true"}, "labels": {"a": "b"}}}, False),
        ({"spec": {"taints": [{"key": "x", "effect": "NoSchedule"}]}}, False),
        ({"spec": {"unschedulable": True, "providerID": "aws:///x"}}, False),
    ],
)
async def test_the_bot_may_change_only_spec_unschedulable_of_a_node(
    make_kubesim: Make, patch: dict[str, Any], allowed: bool
) -> None:
    sim = await make_kubesim("seed")
    before = copy.deepcopy(sim.get("nodes", None, "gpu-node-01"))
    status, body = await kube_call(
        sim.url, "PATCH", NODE, token=BOT_TOKEN, body=patch, content_type=MERGE
    )
    if allowed:
        assert status == 200, body
        return
    assert status == 422 and "ValidatingAdmissionPolicy 'gpunode-node-cordon'" in body["message"]
    assert sim.get("nodes", None, "gpu-node-01") == before


def test_the_node_policy_allows_exactly_the_annotations_tier_1_sets() -> None:
    objects = render(Path(__file__).resolve().parents[2] / "deploy" / "base")
    policy = find(objects, "ValidatingAdmissionPolicy", "gpunode-node-cordon")
    variables = {v["name"]: v["expression"] for v in policy["spec"]["variables"]}
    allowed = sorted(re.findall(r"'([^']+)'", variables["botAnnotations"]))
    assert allowed == sorted(NODE_PROTECTION)
    assert set(NODE_PROTECTION.values()) == {"true"}


async def test_a_node_protected_by_hand_keeps_its_value_when_the_bot_cordons(
    make_kubesim: Make,
) -> None:
    sim = await make_kubesim("seed")
    hand = {"metadata": {"annotations": {SCALE_DOWN: "yes-by-ops"}}}
    status, body = await kube_call(
        sim.url, "PATCH", NODE, token=ADMIN_TOKEN, body=hand, content_type=MERGE
    )
    assert status == 200, body
    cordon = {"spec": {"unschedulable": True}}
    status, body = await kube_call(
        sim.url, "PATCH", NODE, token=BOT_TOKEN, body=cordon, content_type=MERGE
    )
    assert status == 200, body
    assert body["metadata"]["annotations"][SCALE_DOWN] == "yes-by-ops"


async def test_a_cordon_twice_and_an_uncordon_pass_with_the_controllers_taint(
    make_kubesim: Make,
) -> None:
    sim = await make_kubesim("seed")
    for value in (True, True, False):
        status, body = await kube_call(
            sim.url,
            "PATCH",
            NODE,
            token=BOT_TOKEN,
            body={"spec": {"unschedulable": value}},
            content_type=MERGE,
        )
        assert status == 200, body


PCS = "/apis/scheduling.k8s.io/v1/priorityclasses"


@pytest.mark.parametrize(
    ("body", "token", "says"),
    [
        (
            priority_class_body("gpunode-critical-training", 1_000_000, description="d"),
            BOT_TOKEN,
            "",
        ),
        (priority_class_body("critical", 1000, description="d"), BOT_TOKEN, "named gpunode-*"),
        (
            {**priority_class_body("gpunode-x", 1000, description="d"), "globalDefault": True},
            BOT_TOKEN,
            "globalDefault",
        ),
        (priority_class_body("critical", 1000, description="d"), ADMIN_TOKEN, ""),
    ],
)
async def test_the_bot_creates_only_gpunode_priority_classes_never_a_global_default(
    make_kubesim: Make, body: dict[str, Any], token: str, says: str
) -> None:
    sim = await make_kubesim("seed")
    status, answer = await kube_call(sim.url, "POST", PCS, token=token, body=body)
    if not says:
        assert status == 201, answer
        return
    assert status == 422 and says in answer["message"], answer
    assert "ValidatingAdmissionPolicy 'gpunode-priority-class'" in answer["message"]


def test_every_policy_matches_the_service_account_the_base_deploys() -> None:
    objects = render(Path(__file__).resolve().parents[2] / "deploy" / "base")
    deployment = find(objects, "Deployment", "gpunode")
    account = deployment["spec"]["template"]["spec"]["serviceAccountName"]
    user = f"system:serviceaccount:{deployment['metadata']['namespace']}:{account}"
    policies = [o for o in objects if o["kind"] == "ValidatingAdmissionPolicy"]
    bound = {
        o["spec"]["policyName"] for o in objects if o["kind"] == "ValidatingAdmissionPolicyBinding"
    }
    assert {p["metadata"]["name"] for p in policies} == bound
    for policy in policies:
        conditions = [c["expression"] for c in policy["spec"]["matchConditions"]]
        assert conditions == [f"request.userInfo.username == '{user}'"]
