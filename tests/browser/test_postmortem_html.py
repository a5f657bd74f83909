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
    "impact": "Impact",
    "root-cause": "Root cause and contributing factors",
    "detection": "Detection",
    "response": "Response and recovery",
    "went-well": "What went well",
    "went-badly": "What went badly",
    "action-items": "Action items",
    "timeline": "Timeline",
    "evidence-start": "Appendix: evidence at the start",
    "evidence-end": "Appendix: evidence at the end",
    "talking-points": "Appendix: talking points as posted",
    "participants": "Appendix: participants",
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
    # one action: tier 3; after it the node is no longer at risk, so no tier 1
    action = page.get_by_test_id("action")
    expect(action).to_have_count(1)
    expect(action).to_contain_text("Tier 3 · constrain the offender")
    expect(action).to_contain_text("Requested by alice (Alice Ng)")
    expect(action).to_contain_text("Approved by: no approval needed")
    expect(page.get_by_test_id("outcome")).to_have_text(["applied"])
    expect(page.locator("#participants")).to_contain_text("alice (Alice Ng)")
    expect(page.locator("#participants")).not_to_contain_text("Bob Okafor")
    expect(
        page.get_by_test_id("story-row").filter(
            has_text="Tier 3 · constrain the offender: applied."
        )
    ).to_have_count(1)
    expect(page.get_by_test_id("story-row").first).to_contain_text("The kernel killed")
    expect(page.get_by_test_id("action-item").first).to_contain_text("(owner)")
    prose = page.evaluate(
        "() => { const b = document.body.cloneNode(true);"
        " b.querySelectorAll('pre').forEach(p => p.remove()); return b.innerText; }"
    )
    assert "`" not in prose
    for name in ("start", "end"):
        chart = page.get_by_test_id(f"chart-{name}")
        assert chart.evaluate("img => img.complete ? img.naturalWidth : 0") == 1000
    assert [u for u in fetched if not u.startswith(("file:", "data:"))] == []
    shots("postmortem-html", page)
