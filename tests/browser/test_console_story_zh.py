"""The demo story once more, walked by li.wei, the on-call SRE whose Slack is in Simplified
Chinese, in real Chromium: the console's own labels, the incident thread, the modals, the
dry runs and the postmortem are in Chinese; after tier 3 the re-diagnosis says, in Chinese,
that there is nothing left to do (no tier 1 on a node no longer at risk).

Expected wording comes from the zh-CN templates themselves (never typed here), so the test
proves the locale was chosen and threaded through, and the CJK text renders with a CJK font
(``fonts-noto-cjk``, installed by ``make system-deps``). Screenshots:
``test-artifacts/browser/zh-CN-*.png``; ``zh-CN-diagnosis.png`` is the diagnosis.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

import pytest
from playwright.sync_api import Error as PlaywrightError
from playwright.sync_api import expect

from bot.render import environment
from gpunode_sandbox.slacksim.console_labels import labels as console_labels
from tests.browser.test_console_story import (
    DIAGNOSIS_MS,
    INCIDENT,
    NODE,
    STEP_MS,
    _button,
    _field,
    act_as,
)

ZH = "zh-CN"
CJK = re.compile(r"[\u4e00-\u9fff]")
Shots = Callable[[str, Any], Any]


def zh(template: str) -> Any:
    return environment.macros("slack", f"{template}.j2", locale=ZH)


def said(macro: Any, *args: Any) -> str:
    """A template's sentence as the console shows it: markup and emoji codes dropped."""
    text = str(macro(*args)).strip()
    return re.sub(r":[a-z0-9_+-]+:\s*|[*_`]", "", text).strip()


def stable_part(text: str) -> str:
    """The longest run of a sentence without digits (counts differ run to run)."""
    return max(re.split(r"\d+", text), key=len).strip()


def fonts_of(page: Any, selector: str) -> dict[str, int]:
    """The platform fonts Chromium drew the element's text with: family -> glyph count."""
    cdp = page.context.new_cdp_session(page)
    cdp.send("DOM.enable")
    cdp.send("CSS.enable")
    for attempt in range(10):
        # the console re-renders the thread as it polls: a node id found a moment ago can be
        # gone (CDP "Could not find node with given id"); look the element up again then
        root = cdp.send("DOM.getDocument")["root"]["nodeId"]
        node = cdp.send("DOM.querySelector", {"nodeId": root, "selector": selector})["nodeId"]
        try:
            fonts = cdp.send("CSS.getPlatformFontsForNode", {"nodeId": node})["fonts"]
        except PlaywrightError as exc:
            if "Could not find node" not in str(exc) or attempt == 9:
                raise
            continue
        return {f["familyName"]: f["glyphCount"] for f in fonts}
    raise AssertionError(f"{selector}: no node to read the fonts of")


def command(page: Any, text: str, labels: dict[str, str]) -> None:
    box = page.get_by_test_id("command-input")
    box.fill(text)
    box.press("Enter")
    answered = labels["answered"].split("{status}")[0]
    expect(page.get_by_test_id("command-status")).to_contain_text(answered + "200")


def diagnose_in_chinese(page: Any, shots: Shots) -> Any:
    labels = console_labels(ZH)
    act_as(page, "U0LIWEI")
    expect(page.locator("html")).to_have_attribute("lang", ZH)
    expect(page.locator("#sidebar h2")).to_have_text(labels["channels"])
    expect(page.get_by_test_id("command-send")).to_have_text(labels["send"])
    command(page, f"diagnose {NODE}", labels)
    root = page.get_by_test_id("messages").get_by_test_id("message").filter(has_text=NODE).first
    expect(root).to_contain_text(INCIDENT)
    root.get_by_test_id("open-thread").click(timeout=DIAGNOSIS_MS)
    thread = page.get_by_test_id("thread-pane")
    evidence = said(zh("evidence").header, SimpleNamespace(node=NODE))
    expect(thread).to_contain_text(evidence, timeout=DIAGNOSIS_MS)
    expect(thread).to_contain_text(said(zh("evidence").tier_short, 3))
    expect(thread).to_contain_text(said(zh("evidence").details_button))
    expect(thread.locator("header span")).to_have_text(labels["thread"])
    expect(root).to_contain_text(re.compile(r"调查中|缓解中"))  # the root's state, in Chinese
    heading = thread.locator(".bk-header h3").filter(has_text=evidence).first
    heading.scroll_into_view_if_needed()
    shots("zh-CN-diagnosis", page)
    fonts = fonts_of(page, "#thread-pane .bk-header h3")
    assert any("CJK" in family for family in fonts), fonts  # not tofu: a CJK font drew it
    return thread


def cap_the_offender(page: Any, thread: Any, shots: Shots) -> None:
    acting = zh("acting")
    _button(thread, "gpunode_tier3").click()
    modal = page.get_by_test_id("modal")
    expect(modal).to_contain_text(said(acting.modal_title, 3))
    expect(modal.get_by_test_id("modal-submit")).to_have_text(said(acting.modal_submit, 3))
    expect(modal.get_by_test_id("modal-close")).to_have_text(said(acting.cancel_button))
    expect(modal).to_contain_text(console_labels(ZH)["optional"])  # the client's own mark
    _field(modal, "memory_limit").fill("48Gi")
    _field(modal, "memory_request").fill("40Gi")
    _field(modal, "omp_num_threads").fill("4")
    _field(modal, "reason").fill("预处理进程占满了节点内存")
    shots("zh-CN-tier3-modal", page)
    modal.get_by_test_id("modal-submit").click()
    expect(modal.get_by_test_id("input-error")).to_be_visible(timeout=STEP_MS)
    modal.locator('[data-block-id="accept_oom"] input[type="checkbox"]').check()
    modal.get_by_test_id("modal-submit").click()
    expect(page.get_by_test_id("modal")).to_have_count(0, timeout=STEP_MS)
    dry_run = said(acting.dry_run_header, SimpleNamespace(tier=3))
    expect(thread).to_contain_text(dry_run, timeout=STEP_MS)
    expect(thread).to_contain_text("预处理进程占满了节点内存")  # the person's own words, kept
    _button(thread, "gpunode_apply").click()
    dialog = page.get_by_test_id("confirm-dialog")
    expect(dialog).to_contain_text(said(acting.apply_confirm_title))
    page.get_by_test_id("confirm-yes").click()
    diff = said(acting.diff_header, SimpleNamespace(node=NODE))
    expect(thread).to_contain_text(diff, timeout=DIAGNOSIS_MS)
    thread.get_by_test_id("message").filter(has_text=diff).last.scroll_into_view_if_needed()
    shots("zh-CN-tier3-applied-diff", page)


def nothing_left_to_do(page: Any, thread: Any) -> None:
    nothing = said(environment.macros("sentences", "warnings.j2", locale=ZH).node_not_at_risk, {})
    expect(thread).to_contain_text(nothing, timeout=STEP_MS)


def export_timeline(page: Any, shots: Shots) -> None:
    act_as(page, "U0LIWEI")
    command(page, f"timeline {INCIDENT}", console_labels(ZH))
    thread = page.get_by_test_id("thread-pane")
    card = thread.get_by_test_id("file-card").filter(has_text=f"{INCIDENT}-postmortem.html")
    expect(card).to_have_count(1, timeout=STEP_MS)
    heading = page.frame_locator('[data-testid="file-frame"]').last.locator("h1")
    expect(heading).to_contain_text(CJK)
    expect(heading).to_contain_text(INCIDENT)
    thread.get_by_test_id("file-frame").last.scroll_into_view_if_needed()
    shots("zh-CN-postmortem-in-thread", page)


@pytest.mark.browser
@pytest.mark.slow
def test_a_chinese_speaking_on_call_walks_the_demo_story_in_chinese(
    demo_console: str, page: Any, shots: Shots
) -> None:
    page.goto(demo_console + "/")
    thread = diagnose_in_chinese(page, shots)
    cap_the_offender(page, thread, shots)
    nothing_left_to_do(page, thread)
    export_timeline(page, shots)


@pytest.mark.browser
def test_lang_in_the_address_picks_the_consoles_language(
    demo_console: str, page: Any, shots: Shots
) -> None:
    page.goto(demo_console + "/?lang=zh-CN")
    act_as(page, "U0ALICE")  # an English speaker's Slack, but the address asks for Chinese
    labels = console_labels(ZH)
    expect(page.locator("html")).to_have_attribute("lang", ZH)
    expect(page.locator('label[for="user-picker"]')).to_have_text(labels["acting_as"])
    expect(page.get_by_test_id("reply-input")).to_have_attribute(
        "placeholder", labels["reply_placeholder"]
    )
    shots("zh-CN-console-labels", page)
