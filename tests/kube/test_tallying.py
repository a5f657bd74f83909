"""The fleet read's page machinery: the ``continue`` token is read from a page's metadata
without decoding its items (so the next page is fetched while this one decodes), a page
shaped otherwise falls back to the full decode, and the decoder gives the same tally in its
own process as on the calling thread."""

from __future__ import annotations

import asyncio
import json

import pytest

from bot.kube import decoding
from bot.kube.decoding import PageDecoder
from bot.kube.gateway import Gateway
from bot.kube.tallying import list_token, read_fleet
from bot.sandbox.kubesim import KubeSim


def test_the_token_is_read_from_metadata_written_before_the_items() -> None:
    body = json.dumps({"kind": "PodList", "metadata": {"continue": "abc"}, "items": [{}]})
    assert list_token(body.encode()) == (True, "abc")
    last = json.dumps({"kind": "PodList", "metadata": {"resourceVersion": "9"}, "items": []})
    assert list_token(last.encode()) == (True, None)


def test_a_page_with_its_items_first_is_not_guessed_at() -> None:
    body = json.dumps({"items": [{"metadata": {"continue": "no"}}], "metadata": {}})
    assert list_token(body.encode()) == (False, None)


async def test_the_decoder_process_and_the_calling_thread_tally_the_same_fleet(
    gateway: tuple[Gateway, KubeSim], monkeypatch: pytest.MonkeyPatch
) -> None:
    gw, _ = gateway
    here, there = PageDecoder(use_process=False), PageDecoder()
    monkeypatch.setattr(decoding, "INLINE_BYTES", 0)  # the seed's pages are small
    try:
        a = await asyncio.to_thread(read_fleet, gw.transport, here)
        b = await asyncio.to_thread(read_fleet, gw.transport, there)
        used_process = there._pool is not None
    finally:
        there.close()
    assert used_process
    assert a.pods == b.pods > 0
    assert a.room() == b.room() and a.loads(None) == b.loads(None)
