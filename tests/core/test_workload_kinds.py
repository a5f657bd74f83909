"""One classifier says what work a pod does, so messages use its words."""

from __future__ import annotations

import pytest

from bot.core.model.cluster import ContainerInfo, OwnerRef, PodInfo
from bot.core.model.workload_kinds import WorkloadKind, is_sidecar, workload_kind


def _pod(
    name: str,
    *,
    owner: tuple[str, str, str] | None = None,
    gpus: int = 0,
    image: str = "registry.example.com/app:1",
    labels: dict[str, str] | None = None,
    containers: list[ContainerInfo] | None = None,
) -> PodInfo:
    owners = [OwnerRef(api_version=owner[0], kind=owner[1], name=owner[2])] if owner else []
    return PodInfo(
        namespace="ml",
        name=name,
        uid=f"uid-{name}",
        owners=owners,
        gpu_request=gpus,
        labels=labels or {},
        containers=containers or [ContainerInfo(name="main", image=image)],
    )


@pytest.mark.parametrize(
    ("pod", "kind"),
    [
        (_pod("llm-worker-0", owner=("kubeflow.org/v1", "PyTorchJob", "llm"), gpus=8), "training"),
        (_pod("sweep-abc", owner=("batch/v1", "Job", "sweep"), gpus=4), "training"),
        (_pod("train-llm-0", owner=("apps/v1", "StatefulSet", "train-llm"), gpus=8), "training"),
        (_pod("vj-0", owner=("batch.volcano.sh/v1alpha1", "Job", "vj"), gpus=1), "training"),
        (
            _pod(
                "llm-serve-1",
                owner=("apps/v1", "ReplicaSet", "x"),
                gpus=1,
                image="vllm/vllm-openai:v0.6.3",
            ),
            "inference",
        ),
        (_pod("jupyter-alice", image="quay.io/jupyter/scipy-notebook:2024"), "notebook"),
        (_pod("embed-1", owner=("apps/v1", "Deployment", "embed"), gpus=1), "gpu_workload"),
        (_pod("etl-1", owner=("apps/v1", "Deployment", "etl")), "workload"),
        (_pod("cpu-sweep", owner=("batch/v1", "Job", "cpu-sweep")), "workload"),
    ],
)
def test_each_pod_gets_the_words_of_the_work_it_does(pod: PodInfo, kind: WorkloadKind) -> None:
    assert workload_kind(pod) == kind


def test_an_inference_server_is_never_called_training() -> None:
    pod = _pod("llm-serve-7c", owner=("apps/v1", "Deployment", "llm-serve"), gpus=1)
    assert workload_kind(pod) == "inference"


def test_a_second_container_or_a_native_sidecar_is_a_sidecar_and_the_first_is_not() -> None:
    pod = _pod(
        "train-0",
        gpus=8,
        containers=[
            ContainerInfo(name="proxy", init=True, sidecar=True),
            ContainerInfo(name="trainer"),
            ContainerInfo(name="log-shipper"),
        ],
    )
    assert not is_sidecar(pod, "trainer")
    assert is_sidecar(pod, "log-shipper") and is_sidecar(pod, "proxy")
