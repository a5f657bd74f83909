"""The serving bot (``build_runtime``, as ``gpunode serve`` builds it) analyses its diagnoses
and draws their charts in its worker process: no thread of its own process runs either
(issue #25: on a thread both hold the interpreter lock the acks need)."""

from __future__ import annotations

import os

from bot.charts.rendering import render_pngs
from bot.core.reporting.analysis import analyze
from gpunode_sandbox.demo import Demo
from gpunode_sandbox.story import CHANNEL
from tests.e2e.conftest import diagnose, thread
from tests.entering import entered


async def test_a_serving_bots_diagnosis_is_analysed_and_charted_beside_its_process(
    demo: Demo,
) -> None:
    with entered(analyze, render_pngs) as here:
        root = await diagnose(demo)

    assert here == [], "no thread of the bot's process analysed or drew"
    assert any(f["name"].endswith(".png") for f in demo.slack.files(CHANNEL)), "charted there"
    analyst = demo.runtime.services.diagnose.analyst
    assert analyst.pid not in (None, os.getpid())
    assert thread(demo, root), "the diagnosis was posted"
