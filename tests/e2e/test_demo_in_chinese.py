"""The default demo (two clusters) read in Chinese: li.wei, the on-call SRE whose Slack is set
to Simplified Chinese, is a responder; she diagnoses a node, asks for the open incidents, the
nodes by memory pressure and help, and opens an action's form through the Slack stand-in: no
English sentence reaches her."""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator
from typing import Any

import pytest

from gpunode_sandbox.demo import Demo, running_demo
from gpunode_sandbox.story import CHANNEL, find_button
from tests.e2e.conftest import incident_roots, text_of, thread
from tests.render.test_catalogs import english_words

LIWEI = "U0LIWEI"
#: English that still reaches her, each named with its reason (none left)
KNOWN_ENGLISH: dict[str, re.Pattern[str]] = {}


@pytest.fixture
async def two() -> AsyncIterator[Demo]:
    async with running_demo("seed", second="slab-leak") as d:
        yield d


async def _slash(demo: Demo, text: str) -> None:
    result = await demo.slack.slash_command(LIWEI, CHANNEL, text)
    assert result.status == 200, result.body
    await demo.drain()


def _text(message: dict[str, Any]) -> str:
    """A message's fallback text and its blocks, as a reader sees them (not JSON-escaped)."""
    return str(message.get("text", "")) + json.dumps(message.get("blocks", []), ensure_ascii=False)


def _leaks(texts: list[str]) -> list[str]:
    """Each English sentence's neighbourhood: the words around every function word found."""
    found = []
    for text in texts:
        for known in KNOWN_ENGLISH.values():
            text = known.sub(" ", text)
        for word in dict.fromkeys(english_words(text)):
            at = text.find(f" {word} ")
            found.append(text[max(0, at - 80) : at + 80] if at >= 0 else word)
    return found


async def test_li_wei_reads_the_two_cluster_demo_in_chinese_without_an_english_sentence(
    two: Demo,
) -> None:
    await _slash(two, "diagnose prod-eu/gpu-node-01")
    roots = [m for m in incident_roots(two.slack) if "gpu-node-01" in text_of(m)]
    assert roots, "li.wei's diagnosis opened no incident thread"
    root_ts = str(roots[-1]["ts"])
    for command in ("status", "top", "help"):
        await _slash(two, command)
    found = find_button(thread(two, root_ts), "gpunode_tier2")
    assert found is not None, "no tier-2 button for a responder"
    ts, button = found
    result = await two.slack.click(LIWEI, CHANNEL, ts, "gpunode_tier2", value=button.get("value"))
    assert result.status == 200, result.body
    await two.drain()

    seen = [_text(m) for m in thread(two, root_ts)]
    seen += [_text(m) for m in two.slack.ephemerals(LIWEI)]
    views = two.slack.open_views(LIWEI)
    assert views, "the tier-2 form did not open for a responder"
    seen += [json.dumps(v, ensure_ascii=False) for v in views]
    assert len(seen) >= 4, seen
    assert any("诊断" in t or "节点" in t for t in seen), "nothing was written in Chinese"
    assert _leaks(seen) == []
