"""Shared GPUs: where NVIDIA's device plugin time-slices or MPS-shares GPUs,
pods on one physical GPU share its memory with no isolation. Per-process GPU memory decides
the verdict, the crash loops of the other pods on that GPU are its evidence, and "GPU
isolation holds" is never said. Each test fails on the code before this change (the verdict
was "healthy" and GPU_ISOLATION_HOLDS was reported)."""

from __future__ import annotations

import random

from bot.core.diagnosis.findings import Diagnosis
from bot.core.diagnosis.gpus import gpu_sharing, node_has_gpus
from bot.core.model.cluster import ClusterView, NodeInfo
from bot.core.model.evidence import GpuProcess
from bot.core.reporting.analysis import analyze
from bot.render.text import render_report_text
from tests.core.generating import (
    AT,
    GI,
    MI,
    _finish,
    _gpus,
    _kernel,
    _Node,
    _pod,
    _set_gpu,
    _system,
    _view,
)

TIME_SLICED = {
    "nvidia.com/gpu.replicas": "4",
    "nvidia.com/gpu.sharing-strategy": "time-slicing",
    "nvidia.com/gpu.product": "NVIDIA-A100-SXM4-80GB-SHARED",
}


def _on_gpu(n: _Node, pod_name: str, index: int, used: int) -> None:
    pod = next(p for p in n.pods if p.name == pod_name)
    proc = next(p for p in n.processes if p.pod_uid == pod.uid)
    n.gpu_procs.append(
        GpuProcess(
            gpu_index=index,
            gpu_uuid=n.gpus[index].uuid,
            pid=proc.pid,
            used_gpu_memory_bytes=used,
            command=proc.command,
            pod_uid=pod.uid,
            container_id=pod.containers[0].container_id,
        )
    )


def _time_sliced(labels: dict[str, str], *, restarts: int = 6) -> tuple[Diagnosis, ClusterView]:
    """4 GPUs time-sliced 4 ways; llm-serve holds 71 GiB of GPU 0, three embed-api pods on
    the same GPU hold 1 GiB each and keep restarting; host memory is fine."""
    n = _Node(rng=random.Random(11), total=251 * GI)
    _pod(
        n,
        "llm-serve-7c9d-aaaaa",
        20 * GI,
        gpu=1,
        request=24 * GI,
        limit=32 * GI,
        owner=("Deployment", "llm-serve"),
    )
    for i in range(3):
        _pod(
            n,
            f"embed-api-5b6c-{i:05d}",
            2 * GI,
            gpu=1,
            request=4 * GI,
            limit=8 * GI,
            owner=("Deployment", "embed-api"),
        )
    _gpus(n, 4, None, max_share=0.1)
    _on_gpu(n, "llm-serve-7c9d-aaaaa", 0, 71 * GI)
    for i in range(3):
        _on_gpu(n, f"embed-api-5b6c-{i:05d}", 0, 1 * GI)
    _set_gpu(n, 0, 74 * GI + 512 * MI)
    for i, p in enumerate(n.pods):
        if p.name.startswith("embed-api"):
            c = p.containers[0].model_copy(
                update={"restart_count": restarts, "last_termination_reason": "Error"}
            )
            n.pods[i] = p.model_copy(update={"containers": [c]})
    view = _view(n)
    node = view.node.model_copy(
        update={
            "labels": labels,
            "allocatable": {**view.node.allocatable, "nvidia.com/gpu": "16"},
            "capacity": {**view.node.capacity, "nvidia.com/gpu": "16"},
        }
    )
    view = view.model_copy(update={"node": node})
    bundle = _finish(n, _kernel(n), pressured=False)
    return analyze(bundle, view, now=AT), view


def test_gfd_labels_tell_time_slicing_mps_and_unshared_gpus_apart() -> None:
    assert gpu_sharing(NodeInfo(name="a", labels=TIME_SLICED)).replicas == 4
    mps = gpu_sharing(NodeInfo(name="b", labels={"nvidia.com/gpu.sharing-strategy": "mps"}))
    assert (mps.strategy, mps.shared) == ("mps", True)
    renamed = gpu_sharing(NodeInfo(name="c", allocatable={"nvidia.com/gpu.shared": "32"}))
    assert (renamed.strategy, renamed.shared) == ("time-slicing", True)
    plain = NodeInfo(name="d", labels={"nvidia.com/gpu.sharing-strategy": "none"})
    assert not gpu_sharing(plain).shared
    assert not node_has_gpus(None, ClusterView(node=NodeInfo(name="cpu", allocatable={"cpu": "8"})))


def test_on_a_time_sliced_gpu_the_pod_holding_its_memory_is_the_verdict() -> None:
    d, _ = _time_sliced(TIME_SLICED)
    v = d.verdict
    assert v.cause == "gpu_memory" and v.subject == v.params["gpu_uuid"]
    assert v.params["gpu_index"] == 0 and v.params["pod"] == "ml/llm-serve-7c9d-aaaaa"
    assert v.params["process_bytes"] == 71 * GI and v.params["fair_share_bytes"] == 20 * GI
    assert v.params["crash_count"] == 3 and v.params["crash_restarts"] == 18


def test_gpu_isolation_holds_is_never_said_where_gpus_are_shared() -> None:
    d, _ = _time_sliced(TIME_SLICED)
    codes = {f.code for f in d.findings}
    assert "GPU_ISOLATION_HOLDS" not in codes and "GPU_SHARED" in codes
    assert "GPU_SHARED_CRASH_LOOP" in codes
    text = render_report_text(d, None, incident="INC-1", locale="en")
    assert "isolation holds" not in text
    assert "ml/llm-serve-7c9d-aaaaa holds 71.0 GiB of this GPU's 80.0 GiB" in text
    assert "keep restarting" in text


def test_the_same_node_without_sharing_labels_stays_unjudged_by_crash_loops() -> None:
    # without the device plugin's sharing config, GPU 0 at 93% with restarts elsewhere is not
    # a shared-GPU verdict: nothing says the pods share one physical GPU's memory
    d, _ = _time_sliced({})
    assert d.verdict.cause != "gpu_memory"
    assert "GPU_SHARED" not in {f.code for f in d.findings}


def test_pods_that_do_not_restart_are_no_crash_loop() -> None:
    d, _ = _time_sliced(TIME_SLICED, restarts=0)
    assert "GPU_SHARED_CRASH_LOOP" not in {f.code for f in d.findings}
    assert d.verdict.cause != "gpu_memory"


def test_a_login_sessions_process_on_a_gpu_is_named_with_its_session_and_command_line() -> None:
    # old code: "python3 (PID n) ... (often left over from a killed container)", and the AI
    # team heard nothing specific
    n = _Node(rng=random.Random(9), total=251 * GI)
    train = _pod(n, "rl-train-0", 20 * GI, gpu=8, limit=40 * GI, owner=("StatefulSet", "rl-train"))
    _gpus(n, 8, train, max_share=0.3)
    orphan = _system(n, "python3", 2 * GI, "user.slice/user-1001.slice/session-12.scope")
    orphan = orphan.model_copy(update={"cmdline": "python3 my_experiment.py --lr 3e-4"})
    n.processes[-1] = orphan
    _set_gpu(n, 5, 70 * GI)
    n.gpu_procs.append(
        GpuProcess(
            gpu_index=5,
            gpu_uuid=n.gpus[5].uuid,
            pid=orphan.pid,
            used_gpu_memory_bytes=60 * GI,
            command="python3",
        )
    )
    d = analyze(_finish(n, _kernel(n), pressured=False), _view(n), now=AT)
    v = d.verdict
    assert v.cause == "gpu_orphan"
    assert (v.params["origin"], v.params["unit"], v.params["user_id"]) == (
        "login_session",
        "session-12.scope",
        "1001",
    )
    text = render_report_text(d, None, incident="INC-1", locale="en")
    assert "user 1001's login session (session-12.scope)" in text.split("HOST MEMORY")[0]
    ai = next(p for p in d.talking_points if p.key == "ai.foreign_process_on_gpu")
    assert ai.params["cmdline"] == "python3 my_experiment.py --lr 3e-4"
    assert ai.params["gpu_pods"] == "ml/rl-train-0"


def test_mps_sharing_is_not_called_memory_without_isolation() -> None:
    # the device plugin's MPS caps each client's device memory at its share
    labels = {"nvidia.com/gpu.sharing-strategy": "mps", "nvidia.com/gpu.replicas": "4"}
    d, _ = _time_sliced(labels)
    shared = next(f for f in d.findings if f.code == "GPU_SHARED")
    assert shared.params["strategy"] == "mps"
    text = render_report_text(d, None, incident="INC-1", locale="en")
    assert "share it through MPS" in text
    assert "no isolation" not in text and "no memory isolation" not in text
