"""The default demo (two clusters) read in Chinese: li.wei, the on-call SRE whose Slack is set
to Simplified Chinese, is a responder; she diagnoses a node, asks for the open incidents, the
nodes by memory pressure and help, and opens an action's form through the Slack stand-in; she
carries actions through (a tier-3 form with a bad value then good ones, its dry run, Apply,
the result and Undo; a tier 1 that needs approval, her own approval refused, Bob's counted, the
result), mistypes commands and names a node that does not exist: no English sentence reaches
her, in the thread, her ephemeral answers or her modals."""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator
from typing import Any

import pytest

from gpunode_sandbox.demo import Demo, running_demo
from gpunode_sandbox.story import CHANNEL, find_button
from tests.e2e.conftest import incident_roots, modal_values, press, text_of, thread
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


BOB = "U0BOB"


def _seen(demo: Demo, root_ts: str) -> list[str]:
    """Everything li.wei can read: the thread, her ephemeral answers and her open modals."""
    seen = [_text(m) for m in thread(demo, root_ts)]
    seen += [_text(m) for m in demo.slack.ephemerals(LIWEI)]
    seen += [json.dumps(v, ensure_ascii=False) for v in demo.slack.open_views(LIWEI)]
    return seen


async def _submit(demo: Demo, edits: dict[str, Any]) -> dict[str, Any]:
    """Submit li.wei's top modal with ``edits``: the errors Slack shows beside the fields."""
    view = demo.slack.open_views(LIWEI)[-1]
    result = await demo.slack.submit_view(LIWEI, view["id"], modal_values(view, edits))
    assert result.status == 200, result.body
    await demo.drain()
    left = demo.slack.open_views(LIWEI)
    return dict(left[-1].get("errors", {})) if left else {}


async def _her_diagnosis(demo: Demo) -> str:
    await _slash(demo, "diagnose prod-eu/gpu-node-01")
    roots = [m for m in incident_roots(demo.slack) if "gpu-node-01" in text_of(m)]
    assert roots, "li.wei's diagnosis opened no incident thread"
    return str(roots[-1]["ts"])


async def test_li_wei_applies_and_undoes_a_tier3_and_mistypes_commands_all_in_chinese(
    two: Demo,
) -> None:
    root_ts = await _her_diagnosis(two)

    # a value the form refuses, then good ones; the dry run; Apply; the result; Undo
    await press(two, root_ts, LIWEI, "gpunode_tier3")
    refused_edit = await _submit(two, {"reason": "内存事故", "memory_limit": "lots"})
    assert set(refused_edit) == {"memory_limit"}, refused_edit
    edits = {"memory_limit": "32Gi", "memory_request": "28Gi", "accept_oom": True}
    assert await _submit(two, {"reason": "内存事故", **edits}) == {}
    await press(two, root_ts, LIWEI, "gpunode_apply")
    await press(two, root_ts, LIWEI, "gpunode_undo")
    deployment = two.kube.get("deployments", "data-prep", "preprocess")
    assert deployment is not None
    [container] = deployment["spec"]["template"]["spec"]["containers"]
    assert container["resources"]["limits"]["memory"] != "32Gi", "the undo did not run"

    # commands that do not parse, and a node that does not exist
    for command in ("frobnicate", "diagnose", "diagnose Prod-EU/gpu-node-01", "timeline x"):
        await _slash(two, command)
    await _slash(two, "diagnose prod-eu/gpu-node-99")

    seen = [*_seen(two, root_ts), json.dumps(refused_edit, ensure_ascii=False)]
    said = "\n".join(seen)
    assert "未知命令" in said and "gpu-node-99" in said
    assert _leaks(seen) == []


async def test_li_wei_requests_a_tier1_her_own_approval_is_refused_and_bobs_counts_in_chinese(
    two: Demo,
) -> None:
    root_ts = await _her_diagnosis(two)
    await press(two, root_ts, LIWEI, "gpunode_tier1")
    assert await _submit(two, {"reason": "内存事故"}) == {}
    await press(two, root_ts, LIWEI, "gpunode_apply")
    await press(two, root_ts, LIWEI, "gpunode_approve")
    refusals = [_text(m) for m in two.slack.ephemerals(LIWEI) if "no_entry" in _text(m)]
    assert refusals, "her own approval was not refused"
    await press(two, root_ts, BOB, "gpunode_approve")
    node = two.kube.get("nodes", None, "gpu-node-01")
    assert node is not None and node["spec"].get("unschedulable") is True, "tier 1 did not run"

    seen = _seen(two, root_ts)
    assert _leaks(seen) == []
