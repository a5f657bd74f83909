"""The decoder process answers each page in order, hands back the page's own exception, and
when it exits the pages in flight fail and the next page starts another process."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from typing import cast

import pytest

from bot.kube.cutting import node_records_page, pod_records_page, reduce_metrics_page
from bot.kube.decoding import DecoderExitedError, PageDecoder
from tests.entering import imported_of

WAIT_S = 120  # generous: starting a process on a busy machine takes seconds; nothing is timed


def test_pages_come_back_in_order_decoded_in_another_process() -> None:
    decoder = PageDecoder()
    try:
        bodies = [json.dumps({"n": i}).encode() for i in range(20)]
        futures = [decoder.submit(json.loads, body, process=True) for body in bodies]
        assert [f.result(timeout=WAIT_S) for f in futures] == [{"n": i} for i in range(20)]
        assert decoder.pid is not None
    finally:
        decoder.close()
    assert decoder.pid is None


def test_a_page_that_fails_to_decode_fails_alone() -> None:
    decoder = PageDecoder()
    try:
        bad = decoder.submit(json.loads, b"{", process=True)
        good = decoder.submit(json.loads, b"[1]", process=True)
        with pytest.raises(json.JSONDecodeError):
            bad.result(timeout=WAIT_S)
        assert good.result(timeout=WAIT_S) == [1]
    finally:
        decoder.close()


def test_when_the_process_exits_its_pages_fail_and_the_next_page_starts_another() -> None:
    decoder = PageDecoder()
    try:
        assert decoder.submit(json.loads, b"1", process=True).result(timeout=WAIT_S) == 1
        first = decoder.pid
        leave = cast(Callable[[bytes], object], sys.exit)  # SystemExit ends the worker
        ended = decoder.submit(leave, b"", process=True)
        with pytest.raises(DecoderExitedError):
            ended.result(timeout=WAIT_S)
        assert decoder.submit(json.loads, b"2", process=True).result(timeout=WAIT_S) == 2
        assert decoder.pid not in (None, first)
    finally:
        decoder.close()


def test_the_decoder_cuts_pages_without_the_models_or_the_event_loops_imports() -> None:
    # pydantic and the core's models (~20 MiB), asyncio and ssl (6.7 MiB) of the decoder's
    # resident memory, counted in the bot's process tree (issue #25's 300 MiB): cutting a
    # page to the informers' records, and metrics to working sets, needs none of them
    decoder = PageDecoder()
    try:
        empty = b'{"metadata": {}, "items": []}'
        for cut in (pod_records_page, node_records_page, reduce_metrics_page):
            decoder.submit(cut, empty, process=True).result(timeout=WAIT_S)
        named = b"bot.kube.cutting pydantic bot.core.model.cluster kubernetes asyncio ssl"
        loaded = decoder.submit(imported_of, named, process=True)
        assert loaded.result(timeout=WAIT_S) == ["bot.kube.cutting"]
    finally:
        decoder.close()
