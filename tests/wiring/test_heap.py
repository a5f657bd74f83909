import gc
import os
import platform

import pytest

from bot.wiring.heap import YOUNG_THRESHOLD, settle_heap, trim_heap, tune_malloc
from bot.working import MALLOC_ENV, WorkerProcess


def test_a_settled_heap_collects_the_young_generation_every_fifty_thousand_allocations() -> None:
    before = gc.get_threshold()
    try:
        settle_heap()
        assert gc.get_threshold() == (YOUNG_THRESHOLD, 10, 10) == (50_000, 10, 10)
        assert gc.get_freeze_count() > 0  # start-up's objects are out of the collections
    finally:
        gc.set_threshold(*before)
        gc.unfreeze()


def test_a_worker_starts_with_the_bots_allocator_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    # glibc reads them when a process starts: the bot's process sets them with mallopt
    # (tune_malloc), each worker finds them in its environment
    for name in MALLOC_ENV:
        monkeypatch.delenv(name, raising=False)
    worker = WorkerProcess(name="test")
    try:
        for name, value in MALLOC_ENV.items():
            assert worker.submit(os.getenv, name).result(timeout=120) == value
    finally:
        worker.close()


def test_an_operators_own_allocator_setting_wins(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MALLOC_ARENA_MAX", "4")
    worker = WorkerProcess(name="test")
    try:
        assert worker.submit(os.getenv, "MALLOC_ARENA_MAX").result(timeout=120) == "4"
    finally:
        worker.close()


@pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="mallopt is glibc's")
def test_the_bots_process_takes_the_same_settings_and_gives_freed_pages_back() -> None:
    assert tune_malloc()
    assert trim_heap()
