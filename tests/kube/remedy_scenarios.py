"""Scenario variants of ``seed`` for the remedy tests: gangs, the bot itself on a GPU node,
batch Jobs, rollout strategies, GitOps and VPA owners. Built as data (the same YAML schema
a shipped scenario uses), so every object goes through the stand-in's seeding."""

from __future__ import annotations

from typing import Any

from gpunode_sandbox.kubesim import Scenario, load_scenario

GANG_CRDS = [
    "pytorchjobs.kubeflow.org",
    "mpijobs.kubeflow.org",
    "jobs.batch.volcano.sh",
    "jobsets.jobset.x-k8s.io",
]
SMALL = {"requests": {"cpu": "1", "memory": "1Gi"}, "limits": {"memory": "1Gi"}}


def container(name: str = "main", **over: Any) -> dict[str, Any]:
    return {"name": name, **SMALL, **over}


def pod(name: str, node: str, namespace: str = "ml-train", **fields: Any) -> dict[str, Any]:
    return {
        "kind": "Pod",
        "name": name,
        "namespace": namespace,
        "nodes": [node],
        "containers": [container()],
        **fields,
    }


def seed_with(
    workloads: list[dict[str, Any]] = (),  # type: ignore[assignment]
    *,
    crds: list[str] = (),  # type: ignore[assignment]
    objects: list[dict[str, Any]] = (),  # type: ignore[assignment]
    drop: tuple[str, ...] = (),
) -> Scenario:
    base = load_scenario("seed").model_dump(mode="json")
    base["workloads"] = [w for w in base["workloads"] if w["name"] not in drop] + list(workloads)
    base["crds"] = list(crds)
    base["objects"] = list(objects)
    base.pop("expected", None)  # a changed seed is no longer the labelled story
    return Scenario.model_validate(base)


def gang_fleet() -> Scenario:
    """gpu-node-01 hosts members of four gangs, a batch Job pod and gpunode's own pod."""
    kf = "training.kubeflow.org"
    return seed_with(
        [
            pod(
                "llm-ft-worker-0",
                "gpu-node-01",
                labels={f"{kf}/job-name": "llm-ft", f"{kf}/replica-type": "worker"},
                owner={"api_version": "kubeflow.org/v1", "kind": "PyTorchJob", "name": "llm-ft"},
            ),
            pod(
                "llm-ft-worker-1",
                "gpu-node-02",
                labels={f"{kf}/job-name": "llm-ft", f"{kf}/replica-type": "worker"},
                owner={"api_version": "kubeflow.org/v1", "kind": "PyTorchJob", "name": "llm-ft"},
            ),
            pod(
                "mpi-bench-launcher",
                "gpu-node-01",
                labels={f"{kf}/job-name": "mpi-bench", f"{kf}/replica-type": "launcher"},
                owner={
                    "api_version": "kubeflow.org/v2beta1",
                    "kind": "MPIJob",
                    "name": "mpi-bench",
                },
            ),
            pod(
                "mpi-bench-worker-0",
                "gpu-node-02",
                labels={f"{kf}/job-name": "mpi-bench", f"{kf}/replica-type": "worker"},
                owner={
                    "api_version": "kubeflow.org/v2beta1",
                    "kind": "MPIJob",
                    "name": "mpi-bench",
                },
            ),
            # a Volcano Job, next to a batch/v1 Job of the same name owned by a JobSet: looked
            # up by kind alone, the Volcano pod would be taken for the JobSet's
            pod(
                "vc-train-0",
                "gpu-node-01",
                annotations={"scheduling.k8s.io/group-name": "vc-train-pg"},
                owner={
                    "api_version": "batch.volcano.sh/v1alpha1",
                    "kind": "Job",
                    "name": "vc-train",
                },
            ),
            {
                "kind": "Job",
                "name": "vc-train",
                "namespace": "ml-train",
                "nodes": ["cpu-node-01"],
                "containers": [container()],
                "owner": {
                    "api_version": "jobset.x-k8s.io/v1alpha2",
                    "kind": "JobSet",
                    "name": "decoy",
                },
            },
            {
                "kind": "Job",
                "name": "nightly-eval",
                "namespace": "ml-train",
                "nodes": ["gpu-node-01"],
                "containers": [container()],
                "controller_spec": {"backoffLimit": 2},
            },
            {
                "kind": "Job",
                "name": "tolerant-eval",
                "namespace": "ml-train",
                "nodes": ["gpu-node-01"],
                "containers": [container()],
                "controller_spec": {
                    "podFailurePolicy": {
                        "rules": [
                            {
                                "action": "Ignore",
                                "onPodConditions": [{"type": "DisruptionTarget"}],
                            }
                        ]
                    }
                },
            },
            {
                "kind": "Deployment",
                "name": "gpunode",
                "namespace": "gpunode",
                "nodes": ["gpu-node-01"],
                "labels": {"app.kubernetes.io/name": "gpunode"},
                "containers": [container("gpunode")],
            },
        ],
        crds=GANG_CRDS,
    )
