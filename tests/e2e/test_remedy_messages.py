"""What the thread says about remedies on a GPU fleet, end to end through the Slack and
Kubernetes stand-ins: gangs named in tier 1, "applied" only once the new pods run (and
evictions complete only once the pods are gone), and Undo saying it restarts pods again."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from bot.render.blocks import DETAILS_ACTION
from gpunode_sandbox.demo import Demo, running_demo
from tests.e2e.conftest import diagnose, press, submit_modal, text_of, thread
from tests.kube.remedy_scenarios import gang_fleet

pytestmark = pytest.mark.slow
ALICE, BOB = "U0ALICE", "U0BOB"


def _said(demo: Demo, root_ts: str) -> str:
    return "\n".join(text_of(m) for m in thread(demo, root_ts))


async def _apply(demo: Demo, root_ts: str, tier: int) -> None:
    await press(demo, root_ts, ALICE, f"gpunode_tier{tier}")
    _, errors = await submit_modal(demo, ALICE, {"reason": "memory incident"})
    assert errors == {}
    await press(demo, root_ts, ALICE, "gpunode_apply")


def _gangs_and_a_job_the_kubelet_evicts_first() -> dict[str, Any]:
    """``gang_fleet`` with the batch Job nightly-eval's pod at the lowest priority and a little
    above its memory request: in the kubelet's order it goes first, so the fewest pods that
    cover the shortage (tier 1) include it, then preprocess."""
    fleet = gang_fleet().model_dump(mode="json")
    fleet["priority_classes"].append({"name": "batch-lowest", "value": -100})
    [job] = [w for w in fleet["workloads"] if w["name"] == "nightly-eval"]
    job["priority_class"] = "batch-lowest"
    for c in job["containers"]:
        c["requests"]["memory"] = "8Mi"
    return fleet


async def test_tier1_in_the_thread_names_the_gang_its_members_elsewhere_and_its_fate(
    tmp_path: Path,
) -> None:
    path = tmp_path / "gangs.yaml"
    path.write_text(yaml.safe_dump(_gangs_and_a_job_the_kubelet_evicts_first()), encoding="utf-8")
    async with running_demo(str(path)) as demo:
        root_ts = await diagnose(demo)
        # the tiers' notes sit behind the brief message's Details
        await press(demo, root_ts, ALICE, DETAILS_ACTION)
        said = _said(demo, root_ts) + text_of(demo.slack.open_views(ALICE)[-1])
        await press(demo, root_ts, ALICE, "gpunode_tier1")
        modal = text_of(demo.slack.open_views(ALICE)[-1])
    assert "Before you confirm" in modal and "llm-ft-worker-1 on gpu-node-02" in modal
    assert "belongs to the gang PyTorchJob ml-train/llm-ft" in said
    assert "llm-ft-worker-1 on gpu-node-02" in said
    assert "CPU-only coordinator here: mpi-bench-launcher (launcher)" in said
    assert "MPI ranks cannot lose a member" in said
    assert "Job ml-train/nightly-eval: evicting" in said and "backoffLimit (0 of 2 used)" in said


async def test_tier2_is_reported_applied_once_the_new_pod_runs_and_undo_warns_of_restarts(
    tmp_path: Path,
) -> None:
    async with running_demo("seed") as demo:
        root_ts = await diagnose(demo)
        await _apply(demo, root_ts, 2)
        said = _said(demo, root_ts)
        pod = demo.kube.get("pods", "ml-train", "train-llm-0")
        assert pod is not None and pod["status"]["phase"] == "Running"
        assert pod["spec"].get("priorityClassName")
        assert "accepted the change; it is *applied* only once the new pods run" in said
        assert (
            "*Applied* · StatefulSet `ml-train/train-llm`: 1 of 1 pod runs the new template" in said
        )
        assert "Undo puts the old template back on `StatefulSet/ml-train/train-llm`" in said
        assert "restart *a second time*" in said
        await press(demo, root_ts, ALICE, "gpunode_undo")
        assert "The old template is back: the pods restart again" in _said(demo, root_ts)


async def test_tier1_evictions_are_complete_only_once_the_pods_are_gone() -> None:
    async with running_demo("seed") as demo:
        root_ts = await diagnose(demo)
        await _apply(demo, root_ts, 1)
        await press(demo, root_ts, BOB, "gpunode_approve")
        said = _said(demo, root_ts)
    assert "the evicted pods are gone" in said
    assert "*Evictions complete*" in said
