"""The diagnostic Job round trip and each failure reason, through the real client."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from typing import Any

import pytest

from bot.core.model.evidence import EvidenceBundle
from bot.errors import DiagnosticJobError
from bot.kube import jobs
from bot.kube.gateway import Gateway
from gpunode_sandbox.kubesim import KubeSim, list_scenarios, load_scenario
from gpunode_sandbox.kubesim.scenarios import Fault

NS = "gpunode"


def _jobs_left(sim: KubeSim) -> list[str]:
    return [j["metadata"]["name"] for j in sim.list("jobs", NS)]


def _job_posts(sim: KubeSim) -> int:
    return sum(1 for m, path, _ in sim.requests if m == "POST" and path.endswith("/jobs"))


@pytest.mark.slow
@pytest.mark.parametrize("scenario", list_scenarios())
async def test_the_round_trip_yields_evidence_for_every_node_and_leaves_no_job(
    make_gateway: Any, scenario: str
) -> None:
    gw, sim = await make_gateway(scenario)
    for node in [n["metadata"]["name"] for n in sim.list("nodes")][:3]:
        bundle = await gw.run_diagnostic(node)
        assert isinstance(bundle, EvidenceBundle)
        assert bundle.node_name == node
        assert bundle.meminfo is not None
        assert _jobs_left(sim) == []


async def test_concurrent_diagnoses_of_one_node_share_one_job(
    gateway: tuple[Gateway, KubeSim],
) -> None:
    gw, sim = gateway
    bundles = await asyncio.gather(*(gw.run_diagnostic("gpu-node-01") for _ in range(3)))
    assert _job_posts(sim) == 1
    assert len({b.model_dump_json() for b in bundles}) == 1
    assert _jobs_left(sim) == []
    await gw.run_diagnostic("gpu-node-01")  # a later call starts a fresh Job
    assert _job_posts(sim) == 2


async def test_an_unknown_node_is_node_not_found(gateway: tuple[Gateway, KubeSim]) -> None:
    gw, sim = gateway
    with pytest.raises(DiagnosticJobError) as info:
        await gw.run_diagnostic("gpu-node-99")
    assert info.value.code == "node_not_found"
    assert _job_posts(sim) == 0


def _with(
    scenario: str = "seed", *, faults: list[Fault] | None = None, not_ready: str | None = None
) -> Any:
    s = load_scenario(scenario)
    update: dict[str, Any] = {}
    if faults:
        update["faults"] = faults
    if not_ready:
        update["nodes"] = [
            n.model_copy(update={"conditions": {**n.conditions, "Ready": "False"}})
            if n.name == not_ready
            else n
            for n in s.nodes
        ]
    return s.model_copy(update=update)


async def test_a_node_that_is_not_ready_is_refused_before_any_job(make_gateway: Any) -> None:
    gw, sim = await make_gateway(_with(not_ready="gpu-node-01"))
    with pytest.raises(DiagnosticJobError, match="not Ready") as info:
        await gw.run_diagnostic("gpu-node-01")
    assert info.value.code == "node_not_ready"
    assert _job_posts(sim) == 0


async def test_an_image_pull_failure_is_reported_without_waiting_for_the_deadline(
    make_gateway: Any,
) -> None:
    gw, sim = await make_gateway(_with(faults=[Fault(kind="image_pull", node="gpu-node-01")]))
    with pytest.raises(DiagnosticJobError, match=r"kube\.image") as info:
        await asyncio.wait_for(gw.run_diagnostic("gpu-node-01"), 10)
    assert info.value.code == "image_pull"
    assert _jobs_left(sim) == []


async def test_a_collector_crash_is_job_failed(make_gateway: Any) -> None:
    gw, sim = await make_gateway(_with(faults=[Fault(kind="collector_error")]))
    with pytest.raises(DiagnosticJobError, match=r"exit code [1-9]") as info:
        await gw.run_diagnostic("gpu-node-01")
    assert info.value.code == "job_failed"
    assert _jobs_left(sim) == []


async def test_a_pod_that_never_starts_is_not_admitted(make_gateway: Any) -> None:
    gw, sim = await make_gateway(_with(faults=[Fault(kind="job_hang")]), job_timeout_s=1)
    with pytest.raises(DiagnosticJobError, match="never") as info:
        await asyncio.wait_for(gw.run_diagnostic("gpu-node-01"), 30)
    assert info.value.code == "not_admitted"
    assert _jobs_left(sim) == []


async def test_a_collector_running_past_the_deadline_is_deadline_exceeded(
    make_gateway: Any,
) -> None:
    kinds = str(Fault.model_fields["kind"].annotation)
    if "collector_slow" not in kinds:
        pytest.skip("the stand-in has no 'collector_slow' fault yet (requested)")
    slow = Fault.model_validate({"kind": "collector_slow", "node": "gpu-node-01"})
    gw, sim = await make_gateway(_with(faults=[slow]), job_timeout_s=1)
    with pytest.raises(DiagnosticJobError, match="did not finish") as info:
        await asyncio.wait_for(gw.run_diagnostic("gpu-node-01"), 30)
    assert info.value.code == "deadline_exceeded"
    assert _jobs_left(sim) == []


@pytest.mark.parametrize("state", ["deleted", "timeout"])
def test_a_started_pod_that_outlives_the_deadline_is_deadline_exceeded(state: str) -> None:
    pod = {
        "status": {
            "phase": "Running",
            "containerStatuses": [{"name": "collector", "state": {"running": {}}}],
        }
    }
    job = {
        "status": {
            "conditions": [{"type": "Failed", "status": "True", "reason": "DeadlineExceeded"}]
        }
    }
    err = jobs.failure(jobs.PodOutcome(state, pod), job, node="n1", timeout_s=60)
    assert err.code == "deadline_exceeded"
    assert "60s" in str(err)


@pytest.mark.parametrize(
    ("log", "match"),
    [
        ("collector exploded\n", "no evidence JSON"),
        (json.dumps({"schema_version": "0.9", "hostname": "x"}), "schema 0.9"),
        (json.dumps({"schema_version": "1.0", "hostname": "x"}), "does not match"),
    ],
)
async def test_unreadable_evidence_is_evidence_unreadable(
    gateway: tuple[Gateway, KubeSim],
    log: str,
    match: str,
) -> None:
    gw, sim = gateway
    sim.pod_log = lambda namespace, name, query: log  # type: ignore[method-assign]
    with pytest.raises(DiagnosticJobError, match=match) as info:
        await gw.run_diagnostic("gpu-node-01")
    assert info.value.code == "evidence_unreadable"
    assert _jobs_left(sim) == []


async def test_a_cancelled_diagnosis_still_deletes_its_job(make_gateway: Any) -> None:
    gw, sim = await make_gateway(_with(faults=[Fault(kind="job_hang")]), job_timeout_s=60)
    task = asyncio.create_task(gw.run_diagnostic("gpu-node-01"))
    for _ in range(200):
        await asyncio.sleep(0.02)
        if _jobs_left(sim):
            break
    assert _jobs_left(sim)
    await asyncio.sleep(0.2)
    assert any("watch=true" in (q or "") for m, _, q in sim.requests if m == "GET"), (
        "the wait must watch, not poll"
    )
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    for _ in range(100):
        if not _jobs_left(sim):
            break
        await asyncio.sleep(0.02)
    assert _jobs_left(sim) == []
    deletes = [q for m, path, q in sim.requests if m == "DELETE" and "/jobs/" in path]
    assert len(deletes) == 1


@pytest.mark.parametrize(
    ("reason", "code"),
    [
        ("OutOfmemory", "not_admitted"),
        ("Evicted", "not_admitted"),
        ("UnexpectedAdmissionError", "not_admitted"),
        ("DeadlineExceeded", "deadline_exceeded"),
        ("", "job_failed"),
    ],
)
def test_failed_pod_reasons_map_to_codes(reason: str, code: str) -> None:
    pod = {"status": {"phase": "Failed", "reason": reason, "message": "Node didn't have enough"}}
    err = jobs.failure(jobs.PodOutcome("failed", pod), None, node="n1", timeout_s=60)
    assert err.code == code
    assert "n1" in str(err)


@pytest.mark.parametrize(
    "reason", ["CreateContainerError", "CreateContainerConfigError", "RunContainerError"]
)
def test_container_runtime_errors_end_the_wait_and_are_reported(reason: str) -> None:
    pod = {
        "status": {
            "phase": "Pending",
            "containerStatuses": [
                {"name": "collector", "state": {"waiting": {"reason": reason, "message": "boom"}}}
            ],
        }
    }
    assert jobs.classify_pod(pod) == "container_error"
    err = jobs.failure(jobs.PodOutcome("container_error", pod), None, node="n1", timeout_s=60)
    assert err.code == "container_error" and reason in str(err) and "boom" in str(err)


@pytest.mark.parametrize(
    ("priority", "setting", "says"),
    [
        (0, None, "kube.diagnostic_priority_class=system-node-critical"),
        (1_000_000, "gpunode-high", "below the kubelet's critical priority"),
        (2_000_001_000, "system-node-critical", "already ran at critical priority"),
    ],
)
def test_a_kubelet_refusal_offers_the_fallback_only_where_it_can_help(
    priority: int, setting: str | None, says: str
) -> None:
    pod = {
        "spec": {"priority": priority},
        "status": {
            "phase": "Failed",
            "reason": "OutOfcpu",
            "message": "Pod was rejected: Node didn't have enough resource: cpu, requested: 50, "
            "used: 95500, capacity: 95500",
        },
    }
    err = jobs.failure(
        jobs.PodOutcome("failed", pod), None, node="n1", timeout_s=60, priority_class=setting
    )
    assert err.code == "not_admitted"
    assert "requests are full (OutOfcpu: Node didn't have enough resource: cpu" in str(err)
    assert says in str(err)


def test_evidence_after_stderr_lines_is_found() -> None:
    bundle = EvidenceBundle(
        collector_version="1", hostname="h", collected_at="2026-01-01T00:00:00Z"
    )  # type: ignore[arg-type]
    text = "warning: NVML not found\n" + bundle.model_dump_json() + "\n"
    assert jobs.parse_evidence(text) == bundle


@pytest.mark.parametrize(
    ("mode", "code"),
    [
        ("not_admitted", "not_admitted"),
        ("bad_log", "evidence_unreadable"),
        ("old_schema", "evidence_unreadable"),
        ("crash", "job_failed"),
        ("image_pull", "image_pull"),
        ("container_error", "container_error"),
    ],
)
async def test_each_stand_in_job_mode_gives_its_reason_code(
    gateway: tuple[Gateway, KubeSim], mode: str, code: str
) -> None:
    gw, sim = gateway
    sim.diagnostic_mode["gpu-node-02"] = mode
    with pytest.raises(DiagnosticJobError) as info:
        await asyncio.wait_for(gw.run_diagnostic("gpu-node-02"), 20)
    assert info.value.code == code
    assert _jobs_left(sim) == []


_FRESH_DIAGNOSIS = """
import asyncio, sys
from gpunode_sandbox.kubesim import KubeSim, load_scenario
from bot.kube.gateway import Gateway
from tests.kube.conftest import ensure_namespace, settings_for

async def main():
    sim = KubeSim(load_scenario("seed"))
    await sim.start()
    ensure_namespace(sim)
    gw = Gateway.from_settings(settings_for(sim.url))
    bundle = await gw.run_diagnostic("gpu-node-01")
    gw.close()
    await sim.stop()
    print(bundle.node_name, sum(m.startswith("kubernetes.client.models.") for m in sys.modules))

asyncio.run(main())
"""


def test_the_jobs_pod_is_watched_as_api_json_loading_no_client_model() -> None:
    # the client's CoreV1Api and watch.Watch loaded ~250 models (20 MiB of the bot's memory,
    # issue #25's budget) and built one per event; a fresh interpreter: this one has them
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p or os.getcwd() for p in sys.path)}
    done = subprocess.run(
        [sys.executable, "-c", _FRESH_DIAGNOSIS],
        capture_output=True,
        text=True,
        env=env,
        check=True,
        timeout=300,
    )
    assert done.stdout.split() == ["gpu-node-01", "0"]
