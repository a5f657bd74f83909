"""`gpunode diagnose NODE --chart out.png` against the Kubernetes stand-in (no Prometheus):
the chart draws the snapshot and the kernel's records. The images land in test-artifacts/."""

from __future__ import annotations

import asyncio
import io
from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest
from matplotlib import image as mpimg

from bot.cli import main
from bot.core.diagnosis.findings import Diagnosis
from bot.core.reporting.charts import chart_spec
from gpunode_sandbox.kubesim import KubeSim
from gpunode_sandbox.kubesim.access import BOT_TOKEN

pytestmark = pytest.mark.slow
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"


@pytest.mark.parametrize(
    ("scenario", "stacked", "marker"),
    [
        ("seed", "workload:data-prep/preprocess", ("oom_kill", "cgroup OOM kill python")),
        ("slab-leak", "node:slab_unreclaimable", ("oom_kill", "global OOM kill python")),
    ],
)
async def test_the_cli_writes_the_chart_of_a_scenario_with_its_kernel_records(
    make_kubesim: Callable[..., Awaitable[KubeSim]],
    capsys: pytest.CaptureFixture[str],
    scenario: str,
    stacked: str,
    marker: tuple[str, str],
) -> None:
    sim = await make_kubesim(scenario)
    ARTIFACTS.mkdir(exist_ok=True)
    out = ARTIFACTS / f"{scenario}-chart.png"
    out.unlink(missing_ok=True)
    argv = [
        "diagnose",
        "gpu-node-01",
        "--server",
        sim.url,
        "--token",
        BOT_TOKEN,
        "--format",
        "json",
        "--chart",
        str(out),
    ]
    assert await asyncio.to_thread(main, argv) == 0
    diagnosis = Diagnosis.model_validate_json(capsys.readouterr().out)
    spec = chart_spec(diagnosis)
    assert spec.source == "snapshot"
    assert any(k.startswith(stacked) for k in spec.host_keys()), spec.host_keys()
    assert marker in [(m.kind, m.label) for m in spec.markers]
    png = out.read_bytes()
    assert png.startswith(b"\x89PNG\r\n\x1a\n")
    assert mpimg.imread(io.BytesIO(png), format="png").shape[:2] == (600, 1000)
