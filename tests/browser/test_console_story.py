"""The demo story, walked by a person in the browser console of ``gpunode demo``.

Alice diagnoses gpu-node-01 from the command box, reads the brief diagnosis in the thread,
presses tier 3, edits the caps (the bot refuses a limit below the working set until she
ticks the acknowledgement), sees the dry run, applies it through the confirm
dialog, and sees the outcome and the before/after diff. The re-diagnosis offers no tier 1:
tier 3 gave the shortage back, so the thread says there is nothing to do.
Finally Alice exports the timeline: the postmortem draft (Markdown and HTML) appears in the
thread, the HTML shown in a frame. The diagnosis chart shows inline as an image.

Assertions are on what is on screen (texts, dialogs, buttons), never on bot internals.
Screenshots go to ``test-artifacts/browser/``.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pytest
from playwright.sync_api import expect

NODE = "gpu-node-01"
INCIDENT = "INC-0001"
DIAGNOSIS_MS = 40_000  # the diagnostic Job runs in the Kubernetes stand-in
STEP_MS = 15_000  # a click's answer: dry run, apply, re-diagnosis

Shots = Callable[[str, Any], Any]


def _button(scope: Any, action_id: str) -> Any:
    """The newest button with this action id (older messages keep theirs)."""
    return scope.locator(f'[data-testid="button"][data-action-id="{action_id}"]').last


def _field(modal: Any, block_id: str) -> Any:
    return modal.locator(f'[data-block-id="{block_id}"][data-element-type]')


def act_as(page: Any, user_id: str) -> None:
    page.get_by_test_id("user-picker").select_option(user_id)
    expect(page.get_by_test_id("user-picker")).to_have_value(user_id)


def command(page: Any, text: str) -> None:
    box = page.get_by_test_id("command-input")
    box.fill(text)
    box.press("Enter")
    expect(page.get_by_test_id("command-status")).to_contain_text("bot answered 200")


def diagnose(page: Any, shots: Shots) -> Any:
    """Alice runs the command; the thread shows evidence, verdict, talking points, tiers."""
    act_as(page, "U0ALICE")
    command(page, f"diagnose {NODE}")
    root = page.get_by_test_id("messages").get_by_test_id("message").filter(has_text=NODE).first
    expect(root).to_contain_text(INCIDENT)
    root.get_by_test_id("open-thread").click(timeout=DIAGNOSIS_MS)
    thread = page.get_by_test_id("thread-pane")
    expect(thread).to_be_visible()
    expect(thread).to_contain_text(f"Memory evidence · {NODE}", timeout=DIAGNOSIS_MS)
    expect(thread).to_contain_text(re.compile(r"Verdict \((high|medium|low) confidence\)"))
    expect(thread).to_contain_text("AI/ML team")
    expect(thread).to_contain_text("Ops team")
    expect(thread).to_contain_text("Recommended: Tier 3")
    expect(_button(thread, "gpunode_details")).to_be_visible()
    shots("01-diagnosis", page)
    return thread


def cap_the_offender(page: Any, thread: Any, shots: Shots) -> None:
    """Tier 3 with edited caps: refused below the working set until acknowledged, applied."""
    _button(thread, "gpunode_tier3").click()
    modal = page.get_by_test_id("modal")
    expect(modal).to_contain_text("Confirm tier 3")
    expect(modal).to_contain_text("working set")
    _field(modal, "memory_limit").fill("48Gi")
    _field(modal, "memory_request").fill("40Gi")
    _field(modal, "omp_num_threads").fill("4")
    _field(modal, "reason").fill("preprocessing is starving the node")
    shots("02-tier3-modal", page)
    modal.get_by_test_id("modal-submit").click()
    error = modal.get_by_test_id("input-error")
    expect(error).to_contain_text("below the container's current working set", timeout=STEP_MS)
    expect(_field(modal, "memory_limit")).to_have_value("48Gi")  # the edits survive the refusal
    shots("03-tier3-refused-below-working-set", page)
    modal.locator('[data-block-id="accept_oom"] input[type="checkbox"]').check()
    modal.get_by_test_id("modal-submit").click()
    expect(page.get_by_test_id("modal")).to_have_count(0, timeout=STEP_MS)

    expect(thread).to_contain_text("Dry run · Tier 3", timeout=STEP_MS)
    expect(thread).to_contain_text("accepted every change in dry-run mode")
    thread.get_by_test_id("message").filter(
        has_text="Dry run · Tier 3"
    ).last.scroll_into_view_if_needed()
    shots("04-tier3-dry-run", page)
    _button(thread, "gpunode_apply").click()
    dialog = page.get_by_test_id("confirm-dialog")
    expect(dialog).to_contain_text("Apply for real?")
    shots("05-apply-confirm", page)
    page.get_by_test_id("confirm-yes").click()
    expect(dialog).to_have_count(0)
    outcome = thread.get_by_test_id("message").filter(has_text="Tier 3 · constrain").last
    expect(outcome).to_contain_text("Applied", timeout=STEP_MS)
    expect(thread).to_contain_text(f"Before / after on {NODE}", timeout=DIAGNOSIS_MS)
    expect(thread).to_contain_text("Verdict:")
    thread.get_by_test_id("message").filter(
        has_text="Before / after"
    ).last.scroll_into_view_if_needed()
    shots("06-tier3-applied-diff", page)


def nothing_left_to_do(page: Any, thread: Any, shots: Shots) -> None:
    """After tier 3 the node is no longer at risk: the before/after says the new evidence
    offers no further tier and carries no tier button, and the current state (edited in
    place, never posted again) says there is nothing to do."""
    diff = thread.get_by_test_id("message").filter(has_text="Before / after").last
    expect(diff).to_contain_text("offers no further tier", timeout=STEP_MS)
    expect(diff.get_by_test_id("button")).to_have_count(0)
    state = thread.get_by_test_id("message").filter(has_text="Memory evidence")
    expect(state).to_have_count(1)
    expect(state).to_contain_text("Nothing to do", timeout=STEP_MS)
    expect(state.locator('[data-action-id^="gpunode_tier"]')).to_have_count(0)
    diff.scroll_into_view_if_needed()
    shots("07-nothing-left-to-do", page)


def export_timeline(page: Any, shots: Shots) -> None:
    act_as(page, "U0ALICE")
    command(page, f"timeline {INCIDENT}")
    thread = page.get_by_test_id("thread-pane")
    card = thread.get_by_test_id("file-card").filter(has_text=f"{INCIDENT}-postmortem.html")
    expect(card.get_by_test_id("file-meta")).to_contain_text(
        re.compile(rf"{INCIDENT}-postmortem\.html"), timeout=STEP_MS
    )
    md = thread.get_by_test_id("file-card").filter(has_text=f"{INCIDENT}-postmortem.md")
    expect(md).to_have_count(1)
    frame = thread.get_by_test_id("file-frame").last
    expect(frame).to_be_visible()
    expect(page.frame_locator('[data-testid="file-frame"]').last.locator("h1")).to_contain_text(
        "Postmortem draft"
    )
    frame.scroll_into_view_if_needed()
    shots("10-postmortem-in-thread", page)
    with page.context.expect_page() as opened:
        card.get_by_test_id("file").click()
    content = opened.value
    expect(content.locator("h1")).to_contain_text(INCIDENT)
    expect(content.locator("#summary")).to_contain_text(NODE)
    expect(content.locator("#participants")).to_contain_text("Alice Ng")
    shots("11-postmortem-opened", content)
    content.close()


def the_chart_is_in_the_thread(page: Any, shots: Shots) -> None:
    """The diagnosis chart shows inline in the thread as an image that loaded."""
    image = page.get_by_test_id("thread-pane").get_by_test_id("file-image").first
    expect(image).to_be_visible(timeout=STEP_MS)
    width = image.evaluate("img => img.complete ? img.naturalWidth : 0")
    assert width == 1000
    image.scroll_into_view_if_needed()
    shots("03b-chart-in-thread", page)


@pytest.mark.browser
@pytest.mark.slow
def test_a_person_walks_the_demo_story_in_the_console(
    demo_console: str, page: Any, shots: Shots
) -> None:
    page.goto(demo_console + "/")
    thread = diagnose(page, shots)
    the_chart_is_in_the_thread(page, shots)
    cap_the_offender(page, thread, shots)
    nothing_left_to_do(page, thread, shots)
    export_timeline(page, shots)
