"""``bot_scrapes``: ``/metrics`` of the real bot, scraped once per test session.

``story``: right after the demo story (``gpunode demo --script``'s story: a diagnosis, tier
3 applied, tier 1 no longer offered, the timeline exported), also written to
test-artifacts/metrics/after-demo.txt for people to read. ``full``: after some trouble on
top (a Slack call refused, a diagnostic Job the API server forbids, an unknown node), so
every label the bot can export has shown up once."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from pathlib import Path

import pytest

from bot.offloading import Offloader
from gpunode_sandbox.demo import running_demo
from gpunode_sandbox.story import CHANNEL, run_story
from tests.telemetry.scraping import Scrape, scrape

ARTIFACT = Path(__file__).resolve().parents[2] / "test-artifacts" / "metrics" / "after-demo.txt"


@dataclass
class BotScrapes:
    story: Scrape
    steps: list[str]
    full: Scrape


async def _scrapes() -> BotScrapes:
    async with running_demo("seed") as demo:
        log = await run_story(demo.slack, demo.drain)
        story = await scrape(demo.bot_url)
        demo.slack.fail("chat.postEphemeral", error="channel_not_found")
        await demo.slack.slash_command("U0ALICE", CHANNEL, "diagnose gpu-node-99")
        demo.kube.faults.add("POST", r"/apis/batch/v1/namespaces/[^/]+/jobs$", status=403)
        await demo.slack.slash_command("U0ALICE", CHANNEL, "diagnose gpu-node-02")
        await demo.drain()
        return BotScrapes(story, log.steps, await scrape(demo.bot_url))


@pytest.fixture(scope="session")
def bot_scrapes() -> BotScrapes:
    result = asyncio.run(_scrapes())
    ARTIFACT.parent.mkdir(parents=True, exist_ok=True)
    ARTIFACT.write_text(result.story.text, encoding="utf-8")
    return result


@pytest.fixture(autouse=True, scope="session")
def _demos_share_one_analysis_worker(shared_analysis_worker: Offloader) -> None:
    """This folder's demos analyse and chart in the test process's one worker
    (tests/conftest.py ``shared_analysis_worker``)."""
