"""``story_scrape``: ``/metrics`` of the real bot after the demo story (``gpunode demo
--script``'s story: a diagnosis, tier 3 applied, tier 1 approved and executed, the
timeline exported), scraped once per module; also written to
test-artifacts/metrics/after-demo.txt for people to read."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from bot.sandbox.demo import running_demo
from bot.sandbox.story import run_story
from tests.telemetry.scraping import Scrape, scrape

ARTIFACT = Path(__file__).resolve().parents[2] / "test-artifacts" / "metrics" / "after-demo.txt"


async def _story_scrape() -> tuple[Scrape, list[str]]:
    async with running_demo("seed") as demo:
        log = await run_story(demo.slack, demo.drain)
        return await scrape(demo.bot_url), log.steps


@pytest.fixture(scope="module")
def story_scrape() -> tuple[Scrape, list[str]]:
    result = asyncio.run(_story_scrape())
    ARTIFACT.parent.mkdir(parents=True, exist_ok=True)
    ARTIFACT.write_text(result[0].text, encoding="utf-8")
    return result
