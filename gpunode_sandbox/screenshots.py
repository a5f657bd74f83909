"""``make screenshots``: the pictures issue #22 and #23 ask for, taken in real Chromium from
the demo's console (the Slack stand-in's web view) and the exported postmortem.

Runs the seed story against the stand-ins, in two workspaces:
- in English, as Alice: the first diagnosis (root and evidence), the Details view (when the
  tree has a Details button; else the reason it was skipped is printed), the approval
  request for tier 1, the postmortem HTML;
- in Simplified Chinese, as li.wei: a refusal (her own approval request, which she may not
  approve), the diagnosis chart in the thread, the postmortem's timeline.

Each PNG goes to ``docs/screenshots/`` (``--out`` to change it); the script prints one line
per picture, ``wrote PATH`` or ``skipped NAME: why``. It needs Debian's Chromium
(``make system-deps``) and Playwright, as the browser tests do.

Usage: ``python -m gpunode_sandbox.screenshots [--out DIR]``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from gpunode_sandbox.demo import Demo, running_demo
from gpunode_sandbox.slacksim.blocks import message_text
from gpunode_sandbox.story import CHANNEL, StoryError, StoryLog, _confirm, _press, find_button

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking"]
OUT = Path(__file__).resolve().parents[1] / "docs" / "screenshots"
NODE = "gpu-node-01"
ALICE, LIWEI = "U0ALICE", "U0LIWEI"
#: a Slack-like thread width, and tall enough for the longest message
VIEWPORT = {"width": 1280, "height": 2400}
WAIT_MS = 30_000
Shot = Callable[[str, Any], Awaitable[None]]


def _thread(demo: Demo, root: str) -> list[dict[str, Any]]:
    return demo.slack.messages(CHANNEL, thread_ts=root)


def _first_with(messages: list[dict[str, Any]], needle: str) -> dict[str, Any] | None:
    return next((m for m in messages if needle in message_text(m)), None)


async def _diagnose(demo: Demo, user: str) -> str:
    await demo.slack.slash_command(user, CHANNEL, f"diagnose {NODE}")
    await demo.drain()
    roots = [m for m in demo.slack.messages(CHANNEL) if NODE in json.dumps(m.get("blocks", []))]
    if not roots:
        raise StoryError("the diagnose command opened no incident thread")
    return str(roots[-1]["ts"])


async def _request_tier1(demo: Demo, user: str, root: str, reason: str) -> None:
    """Press tier 1, confirm it with a reason, press Apply: the approval request."""
    log = StoryLog(thread_ts=root)
    await _press(demo.slack, log, user, "gpunode_tier1", demo.drain)
    await _confirm(demo.slack, user, reason, demo.drain)
    await _press(demo.slack, log, user, "gpunode_apply", demo.drain)


class Console:
    """The demo's console in one Chromium page, as one person sees it."""

    def __init__(self, page: Any, url: str) -> None:
        self.page = page
        self.url = url

    async def open_thread(self, user: str, root: str) -> Any:
        await self.page.goto(self.url + "/")
        await self.page.get_by_test_id("user-picker").select_option(user)
        message = self.page.locator(f'[data-testid="messages"] [data-ts="{root}"]')
        await message.get_by_test_id("open-thread").click(timeout=WAIT_MS)
        pane = self.page.get_by_test_id("thread-pane")
        await pane.wait_for(timeout=WAIT_MS)
        return pane

    async def message(self, pane: Any, ts: str) -> Any:
        found = pane.locator(f'[data-ts="{ts}"]').first
        await found.wait_for(timeout=WAIT_MS)
        await found.scroll_into_view_if_needed()
        return found


async def english(demo: Demo, console: Console, shot: Shot) -> None:
    root = await _diagnose(demo, ALICE)
    messages = _thread(demo, root)
    pane = await console.open_thread(ALICE, root)
    # the first diagnosis: the root and the first reply (the evidence), as one picture
    first = await console.message(pane, str(messages[1]["ts"]))
    await shot("en-first-diagnosis", pane.locator(f'[data-ts="{messages[0]["ts"]}"]').first)
    await shot("en-first-diagnosis-evidence", first)

    details = next(
        (
            (str(m["ts"]), el)
            for m in messages
            for b in m.get("blocks") or []
            if b.get("type") == "actions"
            for el in b.get("elements", [])
            if "details" in str(el.get("action_id", ""))
        ),
        None,
    )
    if details is None:
        print("skipped en-details: no Details button on this tree (issue #23 §1, helper brief)")
    else:
        ts, button = details
        await demo.slack.click(ALICE, CHANNEL, ts, button["action_id"], value=button.get("value"))
        await demo.drain()
        modal = console.page.get_by_test_id("modal")
        try:  # the console shows the view Slack was asked to open
            await modal.last.wait_for(timeout=15_000)
        except Exception:  # no modal: the answer was an ephemeral in the thread
            pane = await console.open_thread(ALICE, root)
            await shot("en-details", pane.get_by_test_id("ephemeral").last)
        else:
            await shot("en-details", modal.last)
            await modal.last.get_by_test_id("modal-close").click()  # as a person closes it

    await _request_tier1(demo, ALICE, root, "stop the cascade while preprocessing restarts")
    found = find_button(_thread(demo, root), "gpunode_approve")
    if found is None:
        print("skipped en-approval-request: tier 1 asked for no approval on this tree")
    else:
        pane = await console.open_thread(ALICE, root)
        await shot("en-approval-request", await console.message(pane, found[0]))

    html = await _postmortem_html(demo, ALICE)
    await console.page.set_content(html)
    await shot("en-postmortem", console.page)


async def chinese(demo: Demo, console: Console, shot: Shot) -> None:
    root = await _diagnose(demo, LIWEI)
    await _request_tier1(demo, LIWEI, root, "预处理挤占了节点内存")
    found = find_button(_thread(demo, root), "gpunode_approve")
    if found is None:
        print("skipped zh-CN-refusal: tier 1 asked for no approval on this tree")
    else:
        # li.wei approves her own request: refused, in her language, to her only
        await demo.slack.click(
            LIWEI, CHANNEL, found[0], "gpunode_approve", value=found[1].get("value")
        )
        await demo.drain()
        pane = await console.open_thread(LIWEI, root)
        refusal = pane.get_by_test_id("ephemeral").last
        await refusal.wait_for(timeout=WAIT_MS)
        await refusal.scroll_into_view_if_needed()
        await shot("zh-CN-refusal", refusal)

    charts = [
        f
        for f in demo.slack.files(CHANNEL)
        if f["thread_ts"] == root and f["name"].endswith(".png")
    ]
    if not charts:
        print("skipped zh-CN-chart: the diagnosis shared no chart into the thread")
    else:
        pane = await console.open_thread(LIWEI, root)
        image = pane.get_by_test_id("file-image").first
        await image.wait_for(timeout=WAIT_MS)
        await image.scroll_into_view_if_needed()
        chart = pane.get_by_test_id("message").filter(has=console.page.get_by_test_id("file-image"))
        await shot("zh-CN-chart", chart.first)

    html = await _postmortem_html(demo, LIWEI)
    await console.page.set_content(html)
    await shot("zh-CN-postmortem-timeline", console.page.locator("section#timeline"))


async def _postmortem_html(demo: Demo, user: str) -> str:
    root = demo.slack.messages(CHANNEL)[-1]
    incident = re.search(r"INC-\d+", json.dumps(root.get("blocks", [])))
    if incident is None:
        raise StoryError("no incident id in the thread's root")
    await demo.slack.slash_command(user, CHANNEL, f"timeline {incident.group(0)}")
    await demo.drain()
    html = [f for f in demo.slack.files(CHANNEL) if f["name"].endswith("-postmortem.html")]
    if not html or html[-1]["content"] is None:
        raise StoryError("the timeline command shared no postmortem HTML")
    return bytes(html[-1]["content"]).decode("utf-8")


async def take(out: Path) -> list[Path]:
    from playwright.async_api import async_playwright

    written: list[Path] = []

    async def shot(name: str, target: Any) -> None:
        path = out / f"{name}.png"
        if hasattr(target, "goto"):  # a whole page (the postmortem): all of it, not the viewport
            await target.screenshot(path=str(path), full_page=True)
        else:
            await target.screenshot(path=str(path))
        written.append(path)
        print(f"wrote {path}")

    async with async_playwright() as pw:
        browser = await pw.chromium.launch(
            executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS
        )
        try:
            for story in (english, chinese):
                async with running_demo("seed") as demo:
                    page = await browser.new_page(viewport=VIEWPORT)  # type: ignore[arg-type]
                    await story(demo, Console(page, demo.console_url), shot)
                    await page.close()
        finally:
            await browser.close()
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    if not CHROMIUM.exists():
        print(f"{CHROMIUM} is absent: `make system-deps` installs Debian's Chromium")
        return 1
    args.out.mkdir(parents=True, exist_ok=True)
    asyncio.run(take(args.out))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
