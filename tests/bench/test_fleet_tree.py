"""``bench/fleet.py`` counts the bot's memory as its whole process tree: the bot's process
and every worker it started that was alive during a measured ``top`` (``bench/tree.py``),
not the bot's process and its page decoder only (the analysis and chart worker, alive for a
while after each diagnosis, went uncounted: issue #25's 300 MiB)."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path

from bench.tree import Sighting, TreeSampler, peak_of, role_of, tree_peaks
from bot.offloading import Offloader
from bot.working import WorkerProcess

TOP = (10.0, 20.0)
ROOT = Path(__file__).resolve().parents[2]


def test_the_bots_workers_are_told_apart_by_the_module_they_run() -> None:
    python = sys.executable
    assert role_of([python, "-m", "bot.kube.decoding"]) == "decoder"
    assert role_of([python, "-m", "bot.working"]) == "analysis_worker"
    assert role_of([python, "-m", "bot.some.new_worker"]) == "other_worker"


def test_processes_that_are_not_the_bots_workers_are_not_counted() -> None:
    python = sys.executable
    assert role_of([python, "-m", "gpunode_sandbox.kubesim.process", "--nodes", "5"]) is None
    assert role_of([python, "-c", "from multiprocessing.spawn import spawn_main"]) is None
    assert role_of(["kubectl", "get", "nodes"]) is None
    assert role_of([python, "-m"]) is None


def test_every_worker_alive_during_a_top_counts_at_its_peak() -> None:
    sightings = [
        Sighting(11.0, 1, "decoder", 40.0),
        Sighting(19.0, 1, "decoder", 54.0),  # its peak grew during the top
        Sighting(12.0, 2, "analysis_worker", 90.0),
    ]
    assert tree_peaks(sightings, [TOP]) == {"decoder": 54.0, "analysis_worker": 90.0}


def test_a_worker_that_ended_before_the_top_is_not_counted_in_it() -> None:
    sightings = [
        Sighting(5.0, 2, "analysis_worker", 90.0),  # drew the diagnosis's charts, then ended
        Sighting(11.0, 1, "decoder", 54.0),
    ]
    assert tree_peaks(sightings, [TOP]) == {"decoder": 54.0}
    assert peak_of(sightings, "analysis_worker") == 90.0, "its own peak is still known"


def test_two_workers_of_one_role_in_one_top_both_count() -> None:
    sightings = [
        Sighting(11.0, 1, "decoder", 50.0),  # it died mid-top; the next page started another
        Sighting(15.0, 3, "decoder", 30.0),
    ]
    assert tree_peaks(sightings, [TOP]) == {"decoder": 80.0}


def test_workers_of_different_tops_are_not_added_together() -> None:
    # each run's gateway has a decoder of its own: they never lived at the same time
    sightings = [
        Sighting(11.0, 1, "decoder", 50.0),
        Sighting(31.0, 3, "decoder", 52.0),
        Sighting(32.0, 4, "analysis_worker", 20.0),
    ]
    assert tree_peaks(sightings, [TOP, (30.0, 40.0)]) == {
        "decoder": 52.0,
        "analysis_worker": 20.0,
    }
    assert tree_peaks([], [TOP]) == {}


async def test_the_sampler_sees_a_worker_of_this_process_and_not_its_other_children() -> None:
    worker = WorkerProcess("bot.kube.decoding", name="decoder")
    sampler = TreeSampler(interval_s=0.05)
    offload = Offloader(process=True)
    try:
        await offload.run(len, "x")  # an analysis worker, alive too
        await asyncio.sleep(1.0)
    finally:
        sightings = sampler.stop()
        worker.close()
        await asyncio.to_thread(offload.close)
    roles = {s.pid: s.role for s in sightings}
    assert roles.get(worker.pid) == "decoder"
    assert "analysis_worker" in roles.values()
    assert sampler.pid not in roles, "the sampler itself is not the bot's"
    # each worker's peak: a read just after a worker's exec finds it before the interpreter
    # has mapped its first MiB (seen once in a full suite run), a truthful but early figure
    peaks: dict[int, float] = {}
    for s in sightings:
        peaks[s.pid] = max(peaks.get(s.pid, 0.0), s.hwm_mib)
    assert all(peak > 1 for peak in peaks.values()), peaks


def test_each_fleet_size_starts_its_peak_afresh() -> None:
    """The sizes run in one process, and a size's bare-list baseline decodes whole pages
    here: without the reset, 2,000 nodes' baseline (242 MiB) was read as 5,000 nodes' peak."""
    script = (
        "from bench.fleet import _reset_hwm\n"
        "from bench.tree import status_mib\n"
        "block = bytearray(256 * 1024 * 1024)\n"
        "block[::4096] = b'x' * len(block[::4096])\n"
        "del block\n"
        "before = status_mib()\n"
        "assert _reset_hwm()\n"
        "print(before, status_mib(), status_mib(field='VmRSS'))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True, cwd=ROOT
    )
    before, after, rss = (float(x) for x in done.stdout.split())
    assert before >= 256
    assert after < 128
    assert after <= rss + 1
