"""A long-running bot analyses each diagnosis in a process of its own (issue #25: on a thread
the analysis holds the interpreter lock the event loop needs for the acks); the diagnosis is
the one a thread computes, and a worker that dies costs a thread's analysis, not a hang."""

from __future__ import annotations

import asyncio
import functools
import logging
import os
import signal
import threading
from collections.abc import Iterator
from contextlib import AbstractContextManager
from datetime import UTC, datetime

import pytest

from bot.core.model.thresholds import Thresholds
from bot.core.reporting import analysis
from bot.offloading import Offloader
from bot.services.analysing import Analyst
from bot.slack.presenter import DRAW_CHARTS
from tests.core.generating import nodes
from tests.entering import entered, hang_unless_in, imported
from tests.services.fake_parts import BUNDLES, load_scenario
from tests.services.world import World

NOW = datetime(2026, 1, 5, 12, 0, tzinfo=UTC)
SCENARIOS = sorted(p.name for p in BUNDLES.iterdir() if (p / "evidence.json").exists())


def analyses_here() -> AbstractContextManager[list[str]]:
    """The threads of this process that entered ``analyze`` while inside."""
    return entered(analysis.analyze)


@pytest.fixture
def analyst() -> Iterator[Analyst]:
    where = Analyst(process=True)
    yield where
    where.close()


async def test_the_bots_diagnosis_is_analysed_in_another_process_not_on_its_threads(
    world: World, analyst: Analyst
) -> None:
    world.diagnose.analyst = analyst
    with analyses_here() as entered:
        outcome = await world.diagnosed()
    assert outcome.created
    assert entered == [], "no thread of the bot's process ran the analysis"
    assert analyst.pid not in (None, os.getpid())


async def test_a_thread_analyst_analyses_in_this_process(world: World) -> None:
    # the check above can fail: without a process the analysis runs on a thread here
    with analyses_here() as entered:
        await world.diagnosed()
    assert len(entered) == 1 and entered[0] != threading.main_thread().name


@pytest.mark.parametrize("scenario", SCENARIOS)
async def test_the_worker_finds_what_the_thread_finds_for_every_fixture_bundle(
    scenario: str, analyst: Analyst
) -> None:
    bundle, view = load_scenario(scenario)
    here = analysis.analyze(bundle, view, thresholds=Thresholds(), now=NOW)
    there = await analyst.analyze(bundle, view, thresholds=Thresholds(), now=NOW)
    assert there == here
    assert await analyst.attach(
        there, None, bundle=bundle, view=view, now=NOW
    ) == await Analyst().attach(here, None, bundle=bundle, view=view, now=NOW)


async def test_the_worker_finds_what_the_thread_finds_for_generated_nodes(
    analyst: Analyst,
) -> None:
    for planted in nodes(12, seed=25):
        bundle, view = planted.bundle, planted.view
        here = analysis.analyze(bundle, view, thresholds=Thresholds(), now=NOW)
        assert await analyst.analyze(bundle, view, thresholds=Thresholds(), now=NOW) == here


async def test_an_analysis_whose_worker_dies_is_done_on_a_thread_and_the_next_starts_another(
    analyst: Analyst, caplog: pytest.LogCaptureFixture
) -> None:
    bundle, view = load_scenario("seed")
    expected = analysis.analyze(bundle, view, thresholds=Thresholds(), now=NOW)
    assert await analyst.analyze(bundle, view, thresholds=Thresholds(), now=NOW) == expected
    first = analyst.pid
    assert first is not None
    os.kill(first, signal.SIGSTOP)  # the next analysis waits in the stopped worker...
    with caplog.at_level(logging.WARNING, logger="bot.offloading"):
        pending = analyst.analyze(bundle, view, thresholds=Thresholds(), now=NOW)
        killer = threading.Timer(0.5, os.kill, (first, signal.SIGKILL))  # ...then it dies
        killer.start()
        try:
            assert await pending == expected
        finally:
            killer.join()
    assert "the analysis process failed" in caplog.text
    assert await analyst.analyze(bundle, view, thresholds=Thresholds(), now=NOW) == expected
    assert analyst.pid not in (None, first)


async def test_a_closed_analyst_analyses_on_threads(analyst: Analyst) -> None:
    bundle, view = load_scenario("seed")
    analyst.close()
    with analyses_here() as entered:
        await analyst.analyze(bundle, view, thresholds=Thresholds(), now=NOW)
    assert len(entered) == 1 and analyst.pid is None


async def test_an_analyst_leaves_a_worker_it_was_lent_running_when_it_closes() -> None:
    lent = Offloader(process=True)
    try:
        analyst = Analyst(offload=lent, close_offload=False)
        bundle, view = load_scenario("seed")
        await analyst.analyze(bundle, view, thresholds=Thresholds(), now=NOW)
        pid = lent.pid
        analyst.close()
        assert pid is not None and lent.pid == pid
        assert await lent.run(os.getpid) == pid
    finally:
        lent.close()


async def test_a_worker_that_does_not_answer_in_time_is_ended_and_the_call_done_on_a_thread(
    caplog: pytest.LogCaptureFixture,
) -> None:
    worker = Offloader(process=True, timeout_s=1)
    try:
        stuck = await worker.run(os.getpid)
        assert stuck != os.getpid()
        with caplog.at_level(logging.WARNING, logger="bot.offloading"):
            assert await worker.run(hang_unless_in, os.getpid()) == os.getpid()
        assert "did not answer in 1 s" in caplog.text
        for _ in range(300):  # the stuck one is ended (its reader sees it go)
            if worker.pid is None:
                break
            await asyncio.sleep(0.1)
        assert worker.pid is None
        # the slot lets go of it when its reader sees the pipe close; the reader then reaps
        # it, and until then the killed process is a zombie that os.kill still finds
        for _ in range(300):
            try:
                os.kill(stuck, 0)
            except ProcessLookupError:
                break
            await asyncio.sleep(0.1)
        with pytest.raises(ProcessLookupError):
            os.kill(stuck, 0)
    finally:
        worker.close()


async def test_an_idle_worker_ends_and_the_next_call_starts_another() -> None:
    # a worker that drew a chart holds matplotlib (~100 MiB): an idle bot does not keep it
    worker = Offloader(process=True, idle_s=0.3)
    try:
        first = await worker.run(os.getpid)
        assert worker.pid == first != os.getpid()
        await asyncio.sleep(0.1)
        assert await worker.run(os.getpid) == first  # busy again before its idle time: kept
        for _ in range(100):
            if worker.pid is None:
                break
            await asyncio.sleep(0.05)
        assert worker.pid is None
        for _ in range(100):  # its input closed, it exits (reaped by the retiring thread)
            try:
                os.kill(first, 0)
            except ProcessLookupError:
                break
            await asyncio.sleep(0.05)
        else:
            pytest.fail("the idle worker is still running")
        second = await worker.run(os.getpid)
        assert second not in (first, os.getpid())
    finally:
        await asyncio.to_thread(worker.close)


async def test_without_an_idle_time_the_worker_stays() -> None:
    # the check above can fail: a worker is not ended for idling unless told to
    worker = Offloader(process=True)
    try:
        first = await worker.run(os.getpid)
        await asyncio.sleep(0.6)
        assert worker.pid == first
    finally:
        await asyncio.to_thread(worker.close)


async def _ended(pid: int) -> bool:
    """Whether process ``pid`` is gone within 5 s (its input closed, it exits)."""
    for _ in range(100):
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        await asyncio.sleep(0.05)
    return False


async def test_a_held_worker_outlives_its_idle_time_and_ends_as_the_last_hold_is_released() -> None:
    # a diagnosis holds its worker from the Job's start to its chart; matplotlib's memory
    # is not kept after it (#25's RSS budget)
    worker = Offloader(process=True, idle_s=0.2)
    try:
        async with worker.held():
            first = worker.pid
            assert first not in (None, os.getpid()), "the hold started the worker"
            assert await worker.run(os.getpid) == first
            async with worker.held():  # another diagnosis at the same time
                await asyncio.sleep(0.5)
            assert await worker.run(os.getpid) == first, "kept past its idle time while held"
        assert worker.pid is None, "ended as the last hold was released, not idle_s later"
        assert first is not None and await _ended(first)
        assert await worker.run(os.getpid) not in (first, os.getpid())
    finally:
        await asyncio.to_thread(worker.close)


async def test_a_held_worker_that_dies_is_replaced_for_the_next_call_which_ends_with_the_hold() -> (
    None
):
    worker = Offloader(process=True, idle_s=0.2)
    try:
        async with worker.held():
            first = worker.pid
            assert first is not None
            os.kill(first, signal.SIGKILL)
            for _ in range(100):  # its reader sees it go
                if worker.pid is None:
                    break
                await asyncio.sleep(0.05)
            second = await worker.run(os.getpid)
            assert second not in (first, os.getpid()), "a new worker, not a thread"
        assert worker.pid is None and await _ended(second)
    finally:
        await asyncio.to_thread(worker.close)


async def test_without_an_idle_time_a_released_hold_keeps_the_worker() -> None:
    # the check above can fail: a worker is not ended at release unless told to idle out
    worker = Offloader(process=True)
    try:
        async with worker.held():
            first = await worker.run(os.getpid)
        assert worker.pid == first
    finally:
        await asyncio.to_thread(worker.close)


async def test_each_new_worker_is_sent_its_prime_before_any_call() -> None:
    # the charts' import overlaps the diagnostic Job's wait in each diagnosis's worker
    prime = functools.partial(exec, "import colorsys")
    worker = Offloader(process=True, idle_s=0.2, prime=prime)
    plain = Offloader(process=True)
    try:
        async with worker.held():
            first = worker.pid
            assert await worker.run(imported, "colorsys")
        async with worker.held():
            assert worker.pid != first
            assert await worker.run(imported, "colorsys"), "the next worker is primed too"
        assert not await plain.run(imported, "colorsys"), "the worker does not import it itself"
    finally:
        await asyncio.to_thread(worker.close)
        await asyncio.to_thread(plain.close)


async def test_a_diagnosis_keeps_its_analysis_worker_only_while_it_runs(world: World) -> None:
    analyst = Analyst(offload=Offloader(process=True, idle_s=3600))
    world.diagnose.analyst = analyst
    try:
        with analyses_here() as entered:
            outcome = await world.diagnosed()
        assert outcome.diagnosis is not None
        assert entered == [], "analysed in the worker"
        assert analyst.pid is None, "ended with the diagnosis, not an hour later"
    finally:
        analyst.close()


async def test_the_analysis_and_chart_worker_imports_no_event_loop_machinery(
    analyst: Analyst,
) -> None:
    # asyncio and ssl are 6.7 MiB of each worker's resident memory, counted in the bot's
    # process tree (issue #25's 300 MiB); the worker analyses and draws without them
    bundle, view = load_scenario("seed")
    await analyst.analyze(bundle, view, thresholds=Thresholds(), now=NOW)
    await analyst.offload.run(DRAW_CHARTS, {}, "en")  # the charts' import: matplotlib
    assert await analyst.offload.run(imported, "matplotlib.figure")
    for name in ("asyncio", "ssl"):
        assert not await analyst.offload.run(imported, name), name
