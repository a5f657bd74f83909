"""Template patches check the rollout they rely on, through the real gateway over the
stand-in: OnDelete restarts nothing, a surge on a full fleet stays Pending, Recreate stops
everything first, GitOps owners and a VPA revert the change; the stand-in rolls out per
strategy (ordered StatefulSets), and a pod it cannot create is a FailedCreate event, not a
403 on the patch. The watch reports "applied" only when the new pods run."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from typing import Any

import pytest

from bot.core.remedies.planning import plan_tier2
from bot.core.remedies.rollouts import rollout_notes
from bot.core.remedies.watching import judge
from bot.core.reporting.analysis import analyze
from bot.kube.gateway import Gateway
from bot.render.sentences import sentence
from bot.services.executing import run_steps
from gpunode_sandbox.kubesim import KubeSim, load_scenario
from tests.conftest import kube_call
from tests.kube.remedy_scenarios import container, seed_with

Make = Callable[..., Awaitable[tuple[Gateway, KubeSim]]]
NODE = "gpu-node-01"
SMP = "application/strategic-merge-patch+json"
#: a template change the bot may make (tier 3's OMP_NUM_THREADS): the admission policy admits
#: nothing else of the template for the bot's token
ENV = [{"name": "OMP_NUM_THREADS", "value": "1"}]
ARGO_TRACKING = {"argocd.argoproj.io/tracking-id": "data:apps/Deployment:data-prep/preprocess"}
FLUX = {"kustomize.toolkit.fluxcd.io/name": "apps", "kustomize.toolkit.fluxcd.io/namespace": "x"}


def _trainer(**fields: Any) -> dict[str, Any]:
    """train-llm (seed's GPU StatefulSet) with other rollout settings."""
    return {
        "kind": "StatefulSet",
        "name": "train-llm",
        "namespace": "ml-train",
        "nodes": [NODE],
        "containers": [
            container(
                "trainer",
                requests={"cpu": "32", "memory": "68Gi", "nvidia.com/gpu": "8"},
                limits={"memory": "72Gi", "nvidia.com/gpu": "8"},
            )
        ],
        **fields,
    }


def _deployment(name: str, **fields: Any) -> dict[str, Any]:
    return {
        "kind": "Deployment",
        "name": name,
        "namespace": "data-prep",
        "nodes": [NODE],
        "containers": [container("worker")],
        **fields,
    }


async def _patch(gw: Gateway, path: str, body: dict[str, Any]) -> Any:
    return await asyncio.to_thread(gw.transport.request, "PATCH", path, body=body, content_type=SMP)


async def _until(check: Callable[[], Any], tries: int = 200) -> Any:
    for _ in range(tries):
        if value := check():
            return value
        await asyncio.sleep(0.05)
    return check()


async def test_on_delete_restarts_nothing_and_the_plan_and_the_watch_say_so(
    make_gateway: Make,
) -> None:
    gw, sim = await make_gateway(
        seed_with(
            [_trainer(controller_spec={"updateStrategy": {"type": "OnDelete"}})],
            drop=("train-llm",),
        )
    )
    plan = plan_tier2(await gw.get_cluster_view(NODE))
    codes = [n.code for n in plan.notes]
    assert "on_delete_nothing_restarts" in codes
    before = sim.get("pods", "ml-train", "train-llm-0")
    assert (await run_steps(gw, plan.steps, dry_run=False)).ok
    await asyncio.sleep(0.3)
    after = sim.get("pods", "ml-train", "train-llm-0")
    assert before and after and before["metadata"]["uid"] == after["metadata"]["uid"]
    progress = await gw.rollout_progress("StatefulSet", "ml-train", "train-llm")
    assert judge(progress) == "on_delete"
    # a pod deleted by hand (a person, as the admin) comes back with the new template
    status, _ = await kube_call(sim.url, "DELETE", "/api/v1/namespaces/ml-train/pods/train-llm-0")
    assert status == 200
    await _until(lambda: judge_now(sim))
    progress = await gw.rollout_progress("StatefulSet", "ml-train", "train-llm")
    assert judge(progress) == "applied"


def judge_now(sim: KubeSim) -> bool:
    pod = sim.get("pods", "ml-train", "train-llm-0")
    return bool(
        pod and pod["spec"].get("priorityClassName") and pod["status"]["phase"] == "Running"
    )


async def test_a_statefulset_rolls_one_pod_at_a_time_highest_ordinal_first(
    make_gateway: Make,
) -> None:
    gw, sim = await make_gateway(
        seed_with([_deployment("x", kind="StatefulSet", replicas=3, nodes=["cpu-node-01"])])
    )
    start = sim.api.store.rv
    await _patch(
        gw,
        "/apis/apps/v1/namespaces/data-prep/statefulsets/x",
        {"spec": {"template": {"spec": {"containers": [{"name": "worker", "env": ENV}]}}}},
    )
    added = await _until(
        lambda: (
            names
            if len(
                names := [
                    e.obj["metadata"]["name"]
                    for e in sim.api.store.history
                    if e.rv > start and e.plural == "pods" and e.type == "ADDED"
                ]
            )
            == 3
            else None
        )
    )
    assert added == ["x-2", "x-1", "x-0"]


async def test_a_surge_that_fits_nowhere_stays_pending_and_the_watch_reports_it_stalled(
    make_gateway: Make,
) -> None:
    huge = {"requests": {"cpu": "1", "memory": "200Gi"}, "limits": {"memory": "200Gi"}}
    strategy = {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0}}
    gw, sim = await make_gateway(
        seed_with(
            [
                _deployment(
                    "big",
                    containers=[container("worker", **huge)],
                    controller_spec={"strategy": strategy},
                )
            ]
        ),
        sim_kw={"kube_version": "1.32"},
    )
    view = await gw.get_cluster_view(NODE)
    pods = [p for p in view.pods if p.name.startswith("big-")]
    [note] = rollout_notes(view, "Deployment", "data-prep", "big", pods=pods, resources=True)
    assert note.code == "surge_does_not_fit"
    text = sentence("notes", note.code, note.params, fmt="text", strict=True, locale="en")
    assert "stays Pending" in text and "the rollout stalls" in text
    old = {
        p["metadata"]["uid"]
        for p in sim.list("pods", "data-prep")
        if "big-" in p["metadata"]["name"]
    }
    await _patch(
        gw,
        "/apis/apps/v1/namespaces/data-prep/deployments/big",
        {"spec": {"template": {"spec": {"containers": [{"name": "worker", "env": ENV}]}}}},
    )
    for _ in range(100):
        progress = await gw.rollout_progress("Deployment", "data-prep", "big")
        if judge(progress) == "stalled":
            break
        await asyncio.sleep(0.05)
    assert judge(progress) == "stalled"
    pending = [p for p in progress.pods if p.current]
    assert (
        pending
        and pending[0].phase == "Pending"
        and "Insufficient memory" in (pending[0].reason or "")
    )
    still = {
        p["metadata"]["uid"]
        for p in sim.list("pods", "data-prep")
        if "big-" in p["metadata"]["name"]
    }
    assert old <= still  # maxUnavailable 0: the old pod keeps running


async def test_a_pod_the_server_refuses_is_a_failed_create_event_not_a_403_on_the_patch(
    make_gateway: Make,
) -> None:
    gw, sim = await make_gateway("seed")
    answer = await _patch(
        gw,
        "/apis/apps/v1/namespaces/data-prep/deployments/preprocess",
        {"spec": {"template": {"spec": {"priorityClassName": "no-such-class"}}}},
    )
    assert answer["spec"]["template"]["spec"]["priorityClassName"] == "no-such-class"
    for _ in range(100):
        progress = await gw.rollout_progress("Deployment", "data-prep", "preprocess")
        if progress.problems:
            break
        await asyncio.sleep(0.05)
    assert judge(progress) == "stalled"
    assert any(
        m.startswith("FailedCreate:") and "no PriorityClass with name no-such-class" in m
        for m in progress.problems
    )
    events = [e for e in sim.list("events", "data-prep") if e["reason"] == "FailedCreate"]
    assert events and events[0]["involvedObject"]["kind"] == "ReplicaSet"


@pytest.mark.parametrize(
    ("labels", "annotations", "tool"),
    [
        ({"argocd.argoproj.io/instance": "data"}, {}, "Argo CD"),
        ({}, ARGO_TRACKING, "Argo CD"),
        (FLUX, {}, "Flux"),
        ({"helm.toolkit.fluxcd.io/name": "preprocess"}, {}, "Flux"),
    ],
)
async def test_a_gitops_owner_is_named_as_reverting_a_template_change(
    make_gateway: Make, labels: dict[str, str], annotations: dict[str, str], tool: str
) -> None:
    base = next(w for w in _seed_workloads() if w["name"] == "preprocess")
    base.update(controller_labels=labels, controller_annotations=annotations)
    gw, _ = await make_gateway(seed_with([base], drop=("preprocess",)))
    view = await gw.get_cluster_view(NODE)
    [w] = [w for w in view.workloads if w.name == "preprocess"]
    assert w.gitops == tool
    pods = [p for p in view.pods if p.name.startswith("preprocess-")]
    notes = rollout_notes(view, "Deployment", "data-prep", "preprocess", pods=pods, resources=True)
    assert [n.params["tool"] for n in notes if n.code == "gitops_reverts"] == [tool]


def _seed_workloads() -> list[dict[str, Any]]:
    return [w.model_dump(mode="json") for w in load_scenario("seed").workloads]


@pytest.mark.parametrize(("mode", "noted"), [("Auto", True), ("Off", False)])
async def test_a_vpa_targeting_the_offender_is_named_in_tier3(
    make_gateway: Make, mode: str, noted: bool
) -> None:
    vpa = {
        "apiVersion": "autoscaling.k8s.io/v1",
        "kind": "VerticalPodAutoscaler",
        "metadata": {"name": "preprocess-vpa", "namespace": "data-prep"},
        "spec": {
            "targetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "preprocess"},
            "updatePolicy": {"updateMode": mode},
        },
    }
    gw, _ = await make_gateway(
        seed_with(crds=["verticalpodautoscalers.autoscaling.k8s.io"], objects=[vpa])
    )
    view = await gw.get_cluster_view(NODE)
    [w] = [w for w in view.workloads if w.name == "preprocess"]
    assert (w.vpa, w.vpa_mode) == ("preprocess-vpa", mode)
    bundle = await gw.run_diagnostic(NODE)
    diagnosis = analyze(bundle, view, now=datetime.now(UTC))
    tier3 = next(p for p in diagnosis.plans if p.tier == 3)
    assert ("vpa_reverts" in [n.code for n in tier3.notes]) is noted


async def test_a_partitioned_statefulset_restarts_exactly_the_pods_the_plan_names(
    make_gateway: Make,
) -> None:
    """The plan's ``restarts`` against what the stand-in's StatefulSet controller does with
    a partition: it recreates ordinals >= partition only (upstream rolling update)."""
    trainer = _trainer(
        replicas=3,
        controller_spec={
            "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"partition": 2}}
        },
    )
    gw, sim = await make_gateway(seed_with([trainer], drop=("train-llm",)))
    view = await gw.get_cluster_view(NODE)
    [w] = [w for w in view.workloads if w.name == "train-llm"]
    assert w.partition == 2
    plan = plan_tier2(view)
    here = sorted(p.key for p in view.pods if p.name.startswith("train-llm-"))
    assert plan.restarts == [k for k in here if k.endswith("-2")]
    [note] = [n for n in plan.notes if n.code == "partition_holds"]
    held = [k for k in here if not k.endswith("-2")]
    assert note.params["count"] == len(held)
    uids = {
        k: (sim.get("pods", "ml-train", k.split("/")[1]) or {})["metadata"]["uid"] for k in here
    }
    assert (await run_steps(gw, plan.steps, dry_run=False)).ok
    await _until(lambda: judge_one(sim, "train-llm-2"))
    await asyncio.sleep(0.3)
    now = {k: (sim.get("pods", "ml-train", k.split("/")[1]) or {}) for k in here}
    restarted = sorted(k for k in here if now[k].get("metadata", {}).get("uid") != uids[k])
    assert restarted == plan.restarts


def judge_one(sim: KubeSim, name: str) -> bool:
    pod = sim.get("pods", "ml-train", name)
    return bool(
        pod and pod["spec"].get("priorityClassName") and pod["status"]["phase"] == "Running"
    )


HELM_LABELS = {"app.kubernetes.io/managed-by": "Helm", "helm.sh/chart": "prep-1.2.0"}
HELM_RELEASE = {"meta.helm.sh/release-name": "prep", "meta.helm.sh/release-namespace": "data-prep"}


@pytest.mark.parametrize(
    ("annotation", "settings", "key", "source"),
    [
        (None, None, "resources.limits.memory", "convention"),
        (
            "{container}.resources.limits.memory",
            None,
            "pandas.resources.limits.memory",
            "annotation",
        ),
        (
            None,
            "pandas=worker.resources.limits.memory",
            "worker.resources.limits.memory",
            "settings",
        ),
        (
            "job.resources.limits.memory",
            "worker.resources",
            "job.resources.limits.memory",
            "annotation",
        ),
    ],
    ids=["no-key-named", "annotation", "settings", "annotation-wins"],
)
async def test_a_helm_release_is_read_from_the_controller_and_tier3_names_its_values_key(
    make_gateway: Make,
    annotation: str | None,
    settings: str | None,
    key: str,
    source: str,
) -> None:
    base = next(w for w in _seed_workloads() if w["name"] == "preprocess")
    notes = dict(HELM_RELEASE)
    if annotation is not None:
        notes["gpunode.io/helm-values-key.memory-limit"] = annotation
    base.update(controller_labels=HELM_LABELS, controller_annotations=notes)
    helm_keys = {"prep": {"memory-limit": settings}} if settings is not None else {}
    gw, _ = await make_gateway(seed_with([base], drop=("preprocess",)), helm_values_keys=helm_keys)
    view = await gw.get_cluster_view(NODE)
    [w] = [w for w in view.workloads if w.name == "preprocess"]
    assert (w.helm_release, w.helm_chart, w.containers) == (
        "data-prep/prep",
        "prep-1.2.0",
        ["pandas"],
    )
    diagnosis = analyze(await gw.run_diagnostic(NODE), view, now=datetime.now(UTC))
    tier3 = next(p for p in diagnosis.plans if p.tier == 3)
    [note] = [n for n in tier3.notes if n.code == "helm_reverts"]
    assert note.params["release"] == "data-prep/prep"
    assert note.params["field"] == (
        "spec.template.spec.containers[name=pandas].resources.limits.memory"
    )
    assert (note.params["values_key"], note.params["key_source"]) == (key, source)
    for locale in ("en", "zh-CN"):
        text = sentence("notes", note.code, note.params, fmt="text", locale=locale, strict=True)
        assert "data-prep/prep" in text and key in text
        # a guessed key always comes with the command that confirms it; a named one says who
        # named it
        confirm = "helm get values prep -n data-prep -a"
        assert (confirm in text) is (source == "convention")
        if source == "annotation":
            assert "gpunode.io/helm-values-key.memory-limit" in text
        if source == "settings":
            assert "kube.helm_values_keys" in text


async def test_a_helm_release_with_two_containers_gets_no_guessed_key(make_gateway: Make) -> None:
    base = next(w for w in _seed_workloads() if w["name"] == "preprocess")
    base.update(
        controller_labels=HELM_LABELS,
        controller_annotations=HELM_RELEASE,
        containers=[*base["containers"], container("metrics", requests={"cpu": "10m"})],
    )
    gw, _ = await make_gateway(seed_with([base], drop=("preprocess",)))
    view = await gw.get_cluster_view(NODE)
    diagnosis = analyze(await gw.run_diagnostic(NODE), view, now=datetime.now(UTC))
    tier3 = next(p for p in diagnosis.plans if p.tier == 3)
    [note] = [n for n in tier3.notes if n.code == "helm_reverts"]
    assert (note.params["values_key"], note.params["key_source"]) == (None, None)
    text = sentence("notes", note.code, note.params, fmt="text", locale="en", strict=True)
    assert "helm get values prep -n data-prep -a lists the release's values" in text


def _kueue(used_gpus: str, *, cohort: str | None = None) -> list[dict[str, Any]]:
    """A LocalQueue ``team-a`` in ml-train on ClusterQueue ``gpus`` (8 GPUs nominal), with
    ``used_gpus`` in use as Kueue reports it in the status."""
    spec: dict[str, Any] = {
        "namespaceSelector": {},
        "resourceGroups": [
            {
                "coveredResources": ["nvidia.com/gpu"],
                "flavors": [
                    {"name": "h100", "resources": [{"name": "nvidia.com/gpu", "nominalQuota": "8"}]}
                ],
            }
        ],
    }
    if cohort:
        spec["cohort"] = cohort
    return [
        {
            "apiVersion": "kueue.x-k8s.io/v1beta1",
            "kind": "LocalQueue",
            "metadata": {"name": "team-a", "namespace": "ml-train"},
            "spec": {"clusterQueue": "gpus"},
        },
        {
            "apiVersion": "kueue.x-k8s.io/v1beta1",
            "kind": "ClusterQueue",
            "metadata": {"name": "gpus"},
            "spec": spec,
            "status": {
                "pendingWorkloads": 2,
                "flavorsUsage": [
                    {
                        "name": "h100",
                        "resources": [
                            {"name": "nvidia.com/gpu", "total": used_gpus, "borrowed": "0"}
                        ],
                    }
                ],
            },
        },
    ]


@pytest.mark.parametrize(
    ("used", "cohort", "full"), [("8", None, True), ("4", None, False), ("8", "pool", False)]
)
async def test_a_kueue_workload_restart_re_enters_admission_and_is_refused_without_quota(
    make_gateway: Make, used: str, cohort: str | None, full: bool
) -> None:
    trainer = _trainer(labels={"kueue.x-k8s.io/queue-name": "team-a"})
    gw, _ = await make_gateway(
        seed_with(
            [trainer],
            drop=("train-llm",),
            crds=["localqueues.kueue.x-k8s.io", "clusterqueues.kueue.x-k8s.io"],
            objects=_kueue(used, cohort=cohort),
        )
    )
    view = await gw.get_cluster_view(NODE)
    [queue] = view.queues
    assert (queue.key, queue.cluster_queue, queue.pending_workloads) == (
        "ml-train/team-a",
        "gpus",
        2,
    )
    assert queue.exhausted == (["nvidia.com/gpu"] if full else [])
    plan = plan_tier2(view)
    codes = [n.code for n in plan.notes]
    assert "kueue_readmission" in codes
    assert ("kueue_no_quota" in codes) is full
    assert ("kueue_queue_full" in plan.warnings) is full
    assert plan.available is not full


async def test_without_kueue_installed_the_queue_label_only_says_admission(
    make_gateway: Make,
) -> None:
    trainer = _trainer(labels={"kueue.x-k8s.io/queue-name": "team-a"})
    gw, _ = await make_gateway(seed_with([trainer], drop=("train-llm",)))
    view = await gw.get_cluster_view(NODE)
    assert view.queues == []
    codes = [n.code for n in plan_tier2(view).notes]
    assert "kueue_readmission" in codes and "kueue_no_quota" not in codes


def _workload(name: str, owner: dict[str, str], status: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta1",
        "kind": "Workload",
        "metadata": {
            "name": name,
            "namespace": "ml-train",
            "ownerReferences": [{**owner, "uid": f"uid-{name}", "controller": True}],
        },
        "spec": {"queueName": "team-a", "podSets": [{"name": "main", "count": 1}]},
        "status": status,
    }


async def test_a_kueue_workload_object_is_read_and_its_admission_and_readiness_named(
    make_gateway: Make,
) -> None:
    """The Workload owner-referenced to the pods' StatefulSet is read (admitted to ClusterQueue
    gpus, pods not all ready, requeued twice for readiness); another one is not theirs."""
    from bot.render.sentences import sentence

    trainer = _trainer(labels={"kueue.x-k8s.io/queue-name": "team-a"})
    sts = {"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "train-llm"}
    theirs = _workload(
        "statefulset-train-llm-7c9f2",
        sts,
        {
            "admission": {"clusterQueue": "gpus", "podSetAssignments": []},
            "conditions": [
                {"type": "QuotaReserved", "status": "True", "reason": "QuotaReserved"},
                {"type": "Admitted", "status": "True", "reason": "Admitted"},
                {"type": "PodsReady", "status": "False", "reason": "PodsReady"},
            ],
            "requeueState": {"count": 2},
        },
    )
    other = _workload(
        "job-eval-3b1d0",
        {"apiVersion": "batch/v1", "kind": "Job", "name": "eval"},
        {"conditions": [{"type": "QuotaReserved", "status": "False", "reason": "Pending"}]},
    )
    gw, _ = await make_gateway(
        seed_with(
            [trainer],
            drop=("train-llm",),
            crds=[
                "localqueues.kueue.x-k8s.io",
                "clusterqueues.kueue.x-k8s.io",
                "workloads.kueue.x-k8s.io",
            ],
            objects=[*_kueue("4"), theirs, other],
        )
    )
    view = await gw.get_cluster_view(NODE)
    here = sorted(p.key for p in view.pods if p.name.startswith("train-llm-"))
    [kw] = view.kueue_workloads
    assert (kw.key, kw.pods, kw.cluster_queue, kw.admitted) == (
        "ml-train/statefulset-train-llm-7c9f2",
        here,
        "gpus",
        True,
    )
    assert (kw.pods_ready, kw.evicted_reason, kw.requeue_count) == (False, None, 2)
    plan = plan_tier2(view)
    [note] = [n for n in plan.notes if n.code == "kueue_workload"]
    assert note.params["count"] == len(plan.restarts) == len(here)
    en = sentence("notes", note.code, note.params, fmt="text", locale="en", strict=True)
    assert "admitted to ClusterQueue gpus and its pods are not all ready" in en
    assert "waitForPodsReady" in en and "requeued it 2 times" in en
    zh = sentence("notes", note.code, note.params, fmt="text", locale="zh-CN", strict=True)
    assert "gpus" in zh and "waitForPodsReady" in zh and "2" in zh


async def test_an_evicted_kueue_workload_says_why(make_gateway: Make) -> None:
    trainer = _trainer(labels={"kueue.x-k8s.io/queue-name": "team-a"})
    sts = {"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "train-llm"}
    evicted = _workload(
        "statefulset-train-llm-7c9f2",
        sts,
        {
            "conditions": [
                {"type": "QuotaReserved", "status": "False", "reason": "Pending"},
                {"type": "Admitted", "status": "False", "reason": "NoReservation"},
                {"type": "Evicted", "status": "True", "reason": "PodsReadyTimeout"},
            ]
        },
    )
    gw, _ = await make_gateway(
        seed_with(
            [trainer],
            drop=("train-llm",),
            crds=["workloads.kueue.x-k8s.io"],
            objects=[evicted],
        )
    )
    view = await gw.get_cluster_view(NODE)
    [kw] = view.kueue_workloads
    assert (kw.admitted, kw.cluster_queue, kw.evicted_reason) == (False, None, "PodsReadyTimeout")
    [note] = [n for n in plan_tier2(view).notes if n.code == "kueue_workload"]
    from bot.render.sentences import sentence

    en = sentence("notes", note.code, note.params, fmt="text", locale="en", strict=True)
    assert "is not admitted" in en and "evicted now (PodsReadyTimeout)" in en
