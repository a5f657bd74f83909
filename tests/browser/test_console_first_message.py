"""The first diagnosis message of the seed story, measured where people read it: the demo's console
renders the thread in Chromium at Slack's thread width, and the message must stay within 1,500
characters and 12 rendered lines. Then the **Details** button opens its modal with every section,
and the report and evidence JSON arrive in the thread as files.

Lines are counted as they render: every text fragment's line box (``Range.getClientRects``)
across the message's blocks, fragments whose vertical centres lie within a few pixels
counted as one line, so a wrapped sentence counts each of its lines and a row of buttons
counts once. Characters are the rendered text of the blocks (the author line and the time
left out). Both figures are printed for the closing note; screenshots go to
``test-artifacts/browser/``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from playwright.sync_api import expect

from tests.browser.test_console_story import DIAGNOSIS_MS, NODE, STEP_MS, act_as, command

#: the thread pane's width for the measure: Slack's preview width for images, inside the
#: range a Slack desktop thread pane opens at (the console's own pane is 420-860 px)
THREAD_WIDTH_PX = 480
BUDGET_CHARS = 1500
BUDGET_LINES = 12
#: fragments whose centres are this close sit on one line (bold, code and emoji shift a
#: fragment by a pixel or two; a line is 15 px x 1.45 = 22 px tall)
SAME_LINE_PX = 6

Shots = Callable[[str, Any], Any]

MEASURE = """(msg) => {
  const blocks = [...msg.querySelectorAll('[data-testid^="block-"]')]
    .filter((b) => !b.parentElement.closest('[data-testid^="block-"]'));
  let chars = 0;
  const centres = [];
  for (const b of blocks) {
    chars += b.innerText.replace(/\\n/g, "").length;
    const walker = document.createTreeWalker(b, NodeFilter.SHOW_TEXT);
    while (walker.nextNode()) {
      const node = walker.currentNode;
      if (!node.textContent.trim()) continue;
      const range = document.createRange();
      range.selectNodeContents(node);
      for (const r of range.getClientRects()) {
        if (r.width > 0 && r.height > 0) centres.push(r.top + r.height / 2);
      }
    }
  }
  centres.sort((a, b) => a - b);
  let lines = 0, last = -Infinity;
  for (const c of centres) { if (c - last > SAME_LINE_PX) { lines += 1; last = c; } }
  return {chars, lines, blocks: blocks.length};
}""".replace("SAME_LINE_PX", str(SAME_LINE_PX))


def first_diagnosis_message(page: Any) -> Any:
    """Alice diagnoses the seed node; the thread's first diagnosis message once rendered."""
    act_as(page, "U0ALICE")
    command(page, f"diagnose {NODE}")
    root = page.get_by_test_id("messages").get_by_test_id("message").filter(has_text=NODE).first
    root.get_by_test_id("open-thread").click(timeout=DIAGNOSIS_MS)
    thread = page.get_by_test_id("thread-pane")
    message = thread.get_by_test_id("message").filter(has_text=f"Memory evidence · {NODE}")
    expect(message).to_have_count(1, timeout=DIAGNOSIS_MS)
    return message.first


def measure(page: Any, message: Any, width: int) -> dict[str, int]:
    page.add_style_tag(
        content=f"#thread-pane {{ width: {width}px !important; min-width: {width}px !important;"
        f" max-width: {width}px !important; flex: none !important; }}"
    )
    assert page.get_by_test_id("thread-pane").evaluate("p => p.getBoundingClientRect().width") == (
        width
    )
    return dict(message.evaluate(MEASURE))


@pytest.mark.browser
@pytest.mark.slow
def test_the_first_diagnosis_message_fits_the_budget_at_thread_width(
    demo_console: str, page: Any, shots: Shots
) -> None:
    page.goto(demo_console + "/")
    message = first_diagnosis_message(page)
    figures = measure(page, message, THREAD_WIDTH_PX)
    print(f"first diagnosis message at {THREAD_WIDTH_PX} px: {figures}")
    message.scroll_into_view_if_needed()
    shots("23-first-diagnosis-message", message)
    assert figures["chars"] <= BUDGET_CHARS, figures
    assert figures["lines"] <= BUDGET_LINES, figures
    for action in ("gpunode_tier1", "gpunode_tier3", "gpunode_details", "gpunode_prevention"):
        expect(message.locator(f'[data-action-id="{action}"]')).to_have_count(1)

    message.locator('[data-action-id="gpunode_details"]').click()
    modal = page.get_by_test_id("modal")
    expect(modal).to_contain_text(f"Details · {NODE}", timeout=STEP_MS)
    for title in ("Evidence", "Talking points", "Findings", "GPUs", "Processes"):
        expect(modal).to_contain_text(title)
    expect(modal).to_contain_text("GPU 0–7")
    shots("23-details-modal", page)
    modal.get_by_test_id("modal-close").click()
    files = page.get_by_test_id("thread-pane").get_by_test_id("file-card")
    expect(files.filter(has_text="INC-0001-evidence.json")).to_have_count(1, timeout=STEP_MS)
    expect(files.filter(has_text="INC-0001-report.md")).to_have_count(1)
