"""No path from the bot's token to a node.

Every shape below was admitted (201/200) with the bot's token by the policies before #21; each
is now refused by deploy/base's ValidatingAdmissionPolicies, evaluated by the Kubernetes
stand-in (CEL with cel-go's semantics). Requests go through the official ``kubernetes``
client over HTTP with the bot's ServiceAccount token, exactly as the gateway sends them. The
shapes the bot itself sends (tiers 2 and 3, their undo, cordon, the diagnostic Job, the
PriorityClass) stay admitted, and a registry mirror is admitted where the installer set it.
"""

from __future__ import annotations

import asyncio
import copy
import json
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any

import pytest
from kubernetes.client.exceptions import ApiException

from bot.config import KubeSettings
from bot.kube.connecting import build_api_client
from bot.kube.jobs import build_job
from bot.kube.prioritizing import priority_class_body
from bot.kube.transport import MERGE, SMP, Transport
from gpunode_sandbox.kubesim import KubeSim
from gpunode_sandbox.kubesim.access import ADMIN_TOKEN, BOT_TOKEN

Make = Callable[..., Awaitable[KubeSim]]
ROOT = Path(__file__).resolve().parents[2]
JOBS = "/apis/batch/v1/namespaces/gpunode/jobs"
DCGM = "/apis/apps/v1/namespaces/gpu-operator/daemonsets/nvidia-dcgm-exporter"
PREPROCESS = "/apis/apps/v1/namespaces/data-prep/deployments/preprocess"
NODE = "/api/v1/nodes/gpu-node-01"
PCS = "/apis/scheduling.k8s.io/v1/priorityclasses"


def _transport(sim: KubeSim, token: str = BOT_TOKEN) -> Transport:
    settings = KubeSettings(mode="server", server=sim.url, token=token, verify_tls=False)
    return Transport(build_api_client(settings, retries=0))


async def _send(
    sim: KubeSim,
    method: str,
    path: str,
    body: Any,
    *,
    content_type: str | None = None,
    token: str = BOT_TOKEN,
    query: Sequence[tuple[str, Any]] = (),
) -> tuple[int, Any]:
    """(HTTP status, answer) of one request with the official client."""
    t = _transport(sim, token)
    try:
        answer = await asyncio.to_thread(
            t.request, method, path, body=body, content_type=content_type, query=query
        )
    except ApiException as exc:
        return int(exc.status), json.loads(exc.body or "{}")
    finally:
        t.api_client.close()
    return 200, answer


def _job(**settings: Any) -> dict[str, Any]:
    return build_job(KubeSettings(**settings), "gpu-node-01", "abc123")


def _pod(job: dict[str, Any]) -> dict[str, Any]:
    return job["spec"]["template"]["spec"]  # type: ignore[no-any-return]


def _container(job: dict[str, Any]) -> dict[str, Any]:
    return _pod(job)["containers"][0]  # type: ignore[no-any-return]


def _env(*pairs: tuple[str, str]) -> Callable[[dict[str, Any]], None]:
    def change(job: dict[str, Any]) -> None:
        _container(job)["env"] += [{"name": k, "value": v} for k, v in pairs]

    return change


def _in_pod(**fields: Any) -> Callable[[dict[str, Any]], None]:
    return lambda job: _pod(job).update(fields)


def _in_container(**fields: Any) -> Callable[[dict[str, Any]], None]:
    return lambda job: _container(job).update(fields)


def _in_pod_security(**fields: Any) -> Callable[[dict[str, Any]], None]:
    return lambda job: _pod(job)["securityContext"].update(fields)


def _in_job(**fields: Any) -> Callable[[dict[str, Any]], None]:
    return lambda job: job["spec"].update(fields)


def _mount(index: int, **fields: Any) -> Callable[[dict[str, Any]], None]:
    return lambda job: _container(job)["volumeMounts"][index].update(fields)


def _gpus(job: dict[str, Any]) -> None:
    _container(job)["resources"]["limits"]["nvidia.com/gpu"] = "8"


def _drop_deadline(job: dict[str, Any]) -> None:
    del job["spec"]["activeDeadlineSeconds"]


def _drop_ttl(job: dict[str, Any]) -> None:
    del job["spec"]["ttlSecondsAfterFinished"]


EXEC = {"exec": {"command": ["sh", "-c", "id > /tmp/x"]}}
#: the 14 Job shapes admitted before #21 (and a few neighbours), with what the denial says
JOB_VARIANTS: list[tuple[str, Callable[[dict[str, Any]], None], str]] = [
    ("a postStart exec hook", _in_container(lifecycle={"postStart": EXEC}), "no lifecycle hooks"),
    ("an exec liveness probe", _in_container(livenessProbe=EXEC), "no probes"),
    ("an exec startup probe", _in_container(startupProbe=EXEC), "no probes"),
    (
        "the PYTHONWARNINGS + BROWSER gadget",
        _env(("PYTHONWARNINGS", "ignore::antigravity.Foo"), ("BROWSER", "sh -c 'id' #%s")),
        "environment is limited to NODE_NAME",
    ),
    ("LD_PRELOAD", _env(("LD_PRELOAD", "/tmp/x.so")), "environment is limited to NODE_NAME"),
    ("PYTHONPATH", _env(("PYTHONPATH", "/tmp")), "environment is limited to NODE_NAME"),
    ("runAsUser 0", _in_pod_security(runAsUser=0), "user and group 65534"),
    ("another runAsUser", _in_pod_security(runAsUser=1000), "user and group 65534"),
    ("runAsGroup 0", _in_pod_security(runAsGroup=0), "user and group 65534"),
    ("fsGroup 0", _in_pod_security(fsGroup=0), "user and group 65534"),
    (
        "runAsGroup 0 in the container",
        lambda job: _container(job)["securityContext"].update(runAsGroup=0),
        "non-root (65534)",
    ),
    (
        "system-node-critical priority",
        _in_pod(priorityClassName="system-node-critical"),
        "may not ask for a priority class",
    ),
    ("8 GPUs", _gpus, "no GPU or other resource"),
    ("parallelism 500", _in_job(parallelism=500), "parallelism 1"),
    ("completions 500", _in_job(completions=500), "parallelism 1"),
    ("tolerate-all", _in_pod(tolerations=[{"operator": "Exists"}]), "by key"),
    ("a subPath", _mount(0, subPath="1/root"), "no subPath"),
    ("host /proc over /usr/local/lib", _mount(0, mountPath="/usr/local/lib"), "/host/proc"),
    ("any nodeName", _in_pod(nodeName="gpu-node-02"), "must name the node in spec.nodeName"),
    ("no deadline", _drop_deadline, "needs a deadline"),
    ("no TTL", _drop_ttl, "needs a deadline"),
    ("a manual selector", _in_job(manualSelector=True), "no manualSelector"),
]


@pytest.mark.parametrize(("what", "change", "says"), JOB_VARIANTS, ids=[v[0] for v in JOB_VARIANTS])
async def test_a_job_that_does_more_than_collect_is_refused_for_the_bots_token(
    make_kubesim: Make, what: str, change: Callable[[dict[str, Any]], None], says: str
) -> None:
    sim = await make_kubesim("seed")
    job = _job()
    change(job)

    status, answer = await _send(sim, "POST", JOBS, job)

    assert status == 422, answer
    assert "ValidatingAdmissionPolicy 'gpunode-diagnostic-job'" in answer["message"]
    assert says in answer["message"], answer["message"]
    assert sim.get("jobs", "gpunode", job["metadata"]["name"]) is None


async def test_the_job_the_bot_renders_runs_the_collector_isolated_and_is_admitted(
    make_kubesim: Make,
) -> None:
    sim = await make_kubesim("seed")
    job = _job()
    assert _container(job)["command"][:5] == [
        "python",
        "-I",
        "-S",
        "/opt/gpunode/bot/__main__.py",
        "collect",
    ]

    status, answer = await _send(sim, "POST", JOBS, job)

    assert status == 200 and answer["metadata"]["name"] == job["metadata"]["name"], answer


MIRROR = "registry.internal.example/mirror/gpunode-collector"


@pytest.mark.parametrize(
    ("access", "image", "admitted"),
    [
        ("base", f"{MIRROR}:0.1.0", False),
        ("registry-mirror", f"{MIRROR}:0.1.0", True),
        ("registry-mirror", f"{MIRROR}@sha256:" + "b" * 64, True),
        ("registry-mirror", "ghcr.io/gpunode/gpunode-collector:0.1.0", False),
        ("registry-mirror", "registry.internal.example/mirror/gpunode:0.1.0", False),
        ("registry-mirror", f"{MIRROR}-evil:0.1.0", False),
        ("registry-mirror", f"{MIRROR}:0.1.0/../x", False),
    ],
)
async def test_a_registry_mirror_is_admitted_where_the_installer_set_it(
    make_kubesim: Make, access: str, image: str, admitted: bool
) -> None:
    directory = ROOT / "deploy" / ("base" if access == "base" else f"overlays/{access}")
    sim = await make_kubesim("seed", access_dir=directory)

    status, answer = await _send(sim, "POST", JOBS, _job(image=image))

    if admitted:
        assert status == 200, answer
    else:
        assert status == 422 and "collector image from" in answer["message"], answer


async def test_a_digest_pin_admits_only_that_digest(make_kubesim: Make) -> None:
    sim = await make_kubesim("seed")
    pinned = "sha256:" + "c" * 64
    status, answer = await _send(
        sim,
        "PATCH",
        "/api/v1/namespaces/gpunode/configmaps/gpunode-admission",
        {"data": {"collectorImageDigest": pinned}},
        content_type=MERGE,
        token=ADMIN_TOKEN,
    )
    assert status == 200, answer

    image = "ghcr.io/gpunode/gpunode-collector:0.1.0"
    other, _ = await _send(sim, "POST", JOBS, _job(image=image))
    ok, answer = await _send(sim, "POST", JOBS, _job(image=f"{image}@{pinned}"))

    assert other == 422
    assert ok == 200, answer


async def test_without_its_settings_configmap_the_job_policy_refuses(make_kubesim: Make) -> None:
    sim = await make_kubesim("seed")
    gone, _ = await _send(
        sim,
        "DELETE",
        "/api/v1/namespaces/gpunode/configmaps/gpunode-admission",
        None,
        token=ADMIN_TOKEN,
    )
    assert gone == 200

    status, answer = await _send(sim, "POST", JOBS, _job())

    assert status == 422 and "no params found" in answer["message"], answer


async def test_the_critical_collector_overlay_admits_its_priority_class(make_kubesim: Make) -> None:
    sim = await make_kubesim("seed", access_dir=ROOT / "deploy" / "overlays" / "critical-collector")
    critical = _job(diagnostic_priority_class="system-node-critical")
    other = build_job(
        KubeSettings(diagnostic_priority_class="system-cluster-critical"), "gpu-node-01", "def456"
    )

    assert (await _send(sim, "POST", JOBS, critical))[0] == 200
    status, answer = await _send(sim, "POST", JOBS, other)
    assert status == 422 and "only for priority class system-node-critical" in answer["message"]


def _template_patch(spec: dict[str, Any]) -> dict[str, Any]:
    return {"spec": {"template": {"spec": spec}}}


def _dcgm(**container: Any) -> dict[str, Any]:
    return _template_patch({"containers": [{"name": "dcgm-exporter", **container}]})


CONTROLLER_VARIANTS: list[tuple[str, str, dict[str, Any], str]] = [
    ("privileged", DCGM, _dcgm(securityContext={"privileged": True}), "securityContext"),
    ("hostPID", DCGM, _template_patch({"hostPID": True}), "host namespaces"),
    (
        "hostPath /",
        DCGM,
        _template_patch(
            {
                "volumes": [{"name": "root", "hostPath": {"path": "/"}}],
                "containers": [
                    {"name": "dcgm-exporter", "volumeMounts": [{"name": "root", "mountPath": "/h"}]}
                ],
            }
        ),
        "volumes",
    ),
    ("a new image", DCGM, _dcgm(image="alpine:3"), "not image"),
    ("a new command", DCGM, _dcgm(command=["sh", "-c", "id"]), "not image, command"),
    (
        "all of it at once",
        DCGM,
        {
            "spec": {
                "template": {
                    "spec": {
                        "hostPID": True,
                        "volumes": [{"name": "root", "hostPath": {"path": "/"}}],
                        "containers": [
                            {
                                "name": "dcgm-exporter",
                                "image": "alpine:3",
                                "command": ["nsenter", "-t", "1", "-a", "sh"],
                                "securityContext": {"privileged": True},
                                "volumeMounts": [{"name": "root", "mountPath": "/h"}],
                            }
                        ],
                    }
                }
            }
        },
        "the bot may change only",
    ),
    (
        "an ordinary Deployment's image",
        PREPROCESS,
        _template_patch({"containers": [{"name": "pandas", "image": "alpine:3"}]}),
        "not image",
    ),
    (
        "an init container",
        PREPROCESS,
        _template_patch({"initContainers": [{"name": "x", "image": "alpine:3"}]}),
        "init or ephemeral containers",
    ),
    (
        "another service account",
        PREPROCESS,
        _template_patch({"serviceAccountName": "default"}),
        "serviceAccountName",
    ),
    (
        "a Secret in a container's environment",
        PREPROCESS,
        _template_patch(
            {
                "containers": [
                    {
                        "name": "pandas",
                        "env": [
                            {
                                "name": "T",
                                "valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}},
                            }
                        ],
                    }
                ]
            }
        ),
        "OMP_NUM_THREADS",
    ),
    (
        "OMP_NUM_THREADS from a Secret",
        PREPROCESS,
        _template_patch(
            {
                "containers": [
                    {
                        "name": "pandas",
                        "env": [
                            {
                                "name": "OMP_NUM_THREADS",
                                "valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}},
                            }
                        ],
                    }
                ]
            }
        ),
        "OMP_NUM_THREADS",
    ),
    (
        "8 GPUs",
        PREPROCESS,
        _template_patch(
            {"containers": [{"name": "pandas", "resources": {"limits": {"nvidia.com/gpu": "8"}}}]}
        ),
        "cpu and memory",
    ),
    (
        "a system-node-critical priority",
        PREPROCESS,
        _template_patch({"priorityClassName": "system-node-critical"}),
        "system-*",
    ),
    (
        "a template label",
        PREPROCESS,
        {"spec": {"template": {"metadata": {"labels": {"x": "y"}}}}},
        "template's labels",
    ),
    ("replicas", PREPROCESS, {"spec": {"replicas": 50}}, "replicas"),
    (
        "a dangling owner",
        PREPROCESS,
        {
            "metadata": {
                "ownerReferences": [
                    {"apiVersion": "v1", "kind": "ConfigMap", "name": "gone", "uid": "0000"}
                ]
            }
        },
        "ownerReferences",
    ),
]


@pytest.mark.parametrize(
    ("what", "path", "patch", "says"), CONTROLLER_VARIANTS, ids=[v[0] for v in CONTROLLER_VARIANTS]
)
async def test_a_controller_patch_outside_tiers_2_and_3_is_refused_for_the_bots_token(
    make_kubesim: Make, what: str, path: str, patch: dict[str, Any], says: str
) -> None:
    sim = await make_kubesim("seed")
    kind, ns, name = path.split("/")[-3:]
    before = copy.deepcopy(sim.get(kind, ns, name))

    status, answer = await _send(sim, "PATCH", path, patch, content_type=SMP)

    assert status == 422, answer
    assert "ValidatingAdmissionPolicy 'gpunode-controller-template'" in answer["message"]
    assert says in answer["message"], answer["message"]
    assert sim.get(kind, ns, name) == before


TIER_PATCHES: list[tuple[str, str, dict[str, Any]]] = [
    (
        "tier 2: a gpunode priority class",
        PREPROCESS,
        _template_patch({"priorityClassName": "gpunode-critical-training"}),
    ),
    ("tier 2 undo: no priority class", PREPROCESS, _template_patch({"priorityClassName": None})),
    (
        "tier 3: memory and cpu and OMP_NUM_THREADS",
        PREPROCESS,
        _template_patch(
            {
                "containers": [
                    {
                        "name": "pandas",
                        "resources": {
                            "requests": {"memory": "8Gi"},
                            "limits": {"memory": "16Gi", "cpu": "4"},
                        },
                        "env": [{"name": "OMP_NUM_THREADS", "value": "4"}],
                    }
                ]
            }
        ),
    ),
    (
        "tier 3 on the DaemonSet",
        DCGM,
        _dcgm(resources={"limits": {"memory": "768Mi"}}),
    ),
    (
        "tier 3 undo: OMP_NUM_THREADS removed",
        PREPROCESS,
        _template_patch(
            {
                "containers": [
                    {"name": "pandas", "env": [{"name": "OMP_NUM_THREADS", "$patch": "delete"}]}
                ]
            }
        ),
    ),
]


@pytest.mark.parametrize(("what", "path", "patch"), TIER_PATCHES, ids=[t[0] for t in TIER_PATCHES])
async def test_what_tiers_2_and_3_write_is_admitted(
    make_kubesim: Make, what: str, path: str, patch: dict[str, Any]
) -> None:
    sim = await make_kubesim("seed")

    status, answer = await _send(sim, "PATCH", path, patch, content_type=SMP)

    assert status == 200, answer


async def test_other_users_may_still_change_a_controller(make_kubesim: Make) -> None:
    sim = await make_kubesim("seed")
    patch = _template_patch({"containers": [{"name": "pandas", "image": "alpine:3"}]})

    status, answer = await _send(
        sim, "PATCH", PREPROCESS, patch, content_type=SMP, token=ADMIN_TOKEN
    )

    assert status == 200, answer


NODE_VARIANTS: list[tuple[str, dict[str, Any], str]] = [
    (
        "a dangling owner",
        {
            "metadata": {
                "ownerReferences": [
                    {"apiVersion": "v1", "kind": "ConfigMap", "name": "gone", "uid": "0000"}
                ]
            }
        },
        "ownerReferences",
    ),
    ("a finalizer", {"metadata": {"finalizers": ["example.com/hold"]}}, "finalizers"),
    (
        "a cordon with an evicting unschedulable taint",
        {
            "spec": {
                "unschedulable": True,
                "taints": [{"key": "node.kubernetes.io/unschedulable", "effect": "NoExecute"}],
            }
        },
        "only spec.unschedulable",
    ),
    ("a podCIDR", {"spec": {"podCIDR": "10.9.0.0/24"}}, "only spec.unschedulable"),
]


@pytest.mark.parametrize(
    ("what", "patch", "says"), NODE_VARIANTS, ids=[v[0] for v in NODE_VARIANTS]
)
async def test_a_node_patch_beyond_cordon_is_refused_for_the_bots_token(
    make_kubesim: Make, what: str, patch: dict[str, Any], says: str
) -> None:
    sim = await make_kubesim("seed")
    before = copy.deepcopy(sim.get("nodes", None, "gpu-node-01"))

    status, answer = await _send(sim, "PATCH", NODE, patch, content_type=MERGE)

    assert status == 422, answer
    assert "ValidatingAdmissionPolicy 'gpunode-node-cordon'" in answer["message"]
    assert says in answer["message"], answer["message"]
    assert sim.get("nodes", None, "gpu-node-01") == before


@pytest.mark.parametrize(
    ("value", "preemption", "says"),
    [
        (1_000_000_000, "PreemptLowerPriority", "value 1000000"),
        (1_000_000_000, "Never", "value 1000000"),
        (1_000_000, "PreemptLowerPriority", "preemptionPolicy: Never"),
    ],
)
async def test_a_priority_class_other_than_tier_2s_is_refused_for_the_bots_token(
    make_kubesim: Make, value: int, preemption: str, says: str
) -> None:
    sim = await make_kubesim("seed")
    body = priority_class_body(
        "gpunode-critical-training", value, description="d", preemption_policy=preemption
    )

    status, answer = await _send(sim, "POST", PCS, body)

    assert status == 422 and says in answer["message"], answer
    assert "ValidatingAdmissionPolicy 'gpunode-priority-class'" in answer["message"]


def _bot_rules(objects: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Every rule of every role bound to the bot's ServiceAccount in a rendered overlay."""
    roles = {
        (o["kind"], o["metadata"]["name"]): o
        for o in objects
        if o["kind"] in ("ClusterRole", "Role")
    }
    rules: list[dict[str, Any]] = []
    for b in objects:
        if b["kind"] not in ("ClusterRoleBinding", "RoleBinding"):
            continue
        if not any(
            s.get("kind") == "ServiceAccount" and s.get("name") == "gpunode" for s in b["subjects"]
        ):
            continue
        rules += roles[(b["roleRef"]["kind"], b["roleRef"]["name"])]["rules"]
    return rules


def test_in_impersonation_mode_the_bot_keeps_only_reads_its_job_and_impersonate() -> None:
    from gpunode_sandbox.kubesim.kustomize import render

    rules = _bot_rules(render(ROOT / "deploy" / "overlays" / "impersonation"))
    writes = {
        (r.get("apiGroups", [""])[0], res, verb)
        for r in rules
        for res in r["resources"]
        for verb in r["verbs"]
        if verb not in ("get", "list", "watch")
    }
    assert writes == {
        ("batch", "jobs", "create"),
        ("batch", "jobs", "delete"),
        ("", "events", "create"),  # the audit chain's anchors, in the bot's own namespace
        ("", "users", "impersonate"),
        ("", "groups", "impersonate"),
        ("authentication.k8s.io", "userextras/gpunode.io/slack-user", "impersonate"),
        ("authentication.k8s.io", "userextras/gpunode.io/approved-by", "impersonate"),
        ("authentication.k8s.io", "userextras/gpunode.io/action-id", "impersonate"),
    }
    people = [r for r in rules if r["resources"] in (["users"], ["groups"])]
    assert people and all(r.get("resourceNames") for r in people)  # never "anyone"
