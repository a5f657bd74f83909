"""The postmortem draft's HTML file stands alone in a browser: every section, both charts
loaded from their data: URIs, nothing fetched from anywhere. Screenshot:
test-artifacts/browser/postmortem-html.png; the files: test-artifacts/postmortem/."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect

from tests.e2e.postmortem_story import export_story_postmortem

DEST = Path(__file__).resolve().parents[2] / "test-artifacts" / "postmortem"
SECTIONS = {
    "summary": "Summary",
    "evidence-start": "Evidence at the start",
    "actions": "Actions",
    "evidence-end": "Evidence at the end",
    "talking-points": "Talking points as posted",
    "participants": "Participants",
    "follow-ups": "Follow-ups",
    "appendix-timeline": "Appendix: the full timeline",
}


def _export_in_a_thread() -> Path:
    """The story runs on a loop of its own (Playwright holds this thread's loop)."""
    errors: list[BaseException] = []

    def run() -> None:
        try:
            asyncio.run(export_story_postmortem(DEST))
        except BaseException as exc:
            errors.append(exc)

    worker = threading.Thread(target=run, name="story-export")
    worker.start()
    worker.join(300)
    assert not worker.is_alive(), "the demo story did not finish within 5 minutes"
    if errors:
        raise errors[0]
    return DEST / "INC-0001-postmortem.html"


@pytest.mark.browser
@pytest.mark.slow
def test_the_postmortem_html_opens_with_every_section_and_its_charts(
    page: Any, shots: Callable[..., Path]
) -> None:
    html = _export_in_a_thread()
    fetched: list[str] = []
    page.on("request", lambda r: fetched.append(r.url))
    page.goto(html.as_uri())
    for section, title in SECTIONS.items():
        expect(page.locator(f"#{section} h2")).to_have_text(title)
    expect(page.get_by_test_id("action")).to_have_count(2)
    expect(page.get_by_test_id("action").first).to_contain_text("Requested by alice (Alice Ng)")
    expect(page.get_by_test_id("action").last).to_contain_text("Approved by: bob (Bob Okafor)")
    expect(page.locator("#participants")).to_contain_text("Bob Okafor")
    for name in ("start", "end"):
        chart = page.get_by_test_id(f"chart-{name}")
        assert chart.evaluate("img => img.complete ? img.naturalWidth : 0") == 1000
    assert [u for u in fetched if not u.startswith(("file:", "data:"))] == []
    shots("postmortem-html", page)
