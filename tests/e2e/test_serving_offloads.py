"""The serving bot (``build_runtime``, as ``gpunode serve`` builds it) analyses its diagnoses
and draws their charts in its worker process: no thread of its own process runs either
(issue #25: on a thread both hold the interpreter lock the acks need); that worker, and
matplotlib's memory in it, is not kept once the diagnosis is done (#25's RSS budget)."""

from __future__ import annotations

import asyncio

import pytest

from bot.charts.rendering import render_pngs
from bot.core.reporting.analysis import analyze
from bot.offloading import Offloader
from gpunode_sandbox.demo import Demo, running_demo
from gpunode_sandbox.story import CHANNEL
from tests.e2e.conftest import diagnose, thread
from tests.entering import entered


@pytest.mark.usefixtures("own_analysis_worker")
async def test_a_serving_bots_diagnosis_is_analysed_and_charted_beside_its_process(
    demo: Demo,
) -> None:
    with entered(analyze, render_pngs) as here:
        root = await diagnose(demo)

    assert here == [], "no thread of the bot's process analysed or drew"
    assert any(f["name"].endswith(".png") for f in demo.slack.files(CHANNEL)), "charted there"
    assert thread(demo, root), "the diagnosis was posted"
    analyst = demo.runtime.services.diagnose.analyst
    for _ in range(200):  # the diagnosis ends just after its chart is posted
        if analyst.pid is None:
            break
        await asyncio.sleep(0.05)
    assert analyst.pid is None, "its worker ended with it"


async def test_the_suites_demos_share_one_worker_and_leave_it_running(
    shared_analysis_worker: Offloader,
) -> None:
    """tests/conftest.py lends every demo of a test process one worker: each diagnosis
    uses it, and it outlives the demo that started it (the next demo's charts need no new
    matplotlib import)."""
    shared = shared_analysis_worker
    pids = []
    for _ in range(2):
        async with running_demo("seed") as demo:
            await diagnose(demo)
            assert demo.runtime.services.diagnose.analyst.offload is shared
        pids.append(shared.pid)
    assert pids[0] is not None and pids == [pids[0], pids[0]]
