"""Fixtures for the browser tests: the whole demo on loopback, and headless Debian Chromium.

``demo_console``: ``gpunode demo`` (seed scenario) running in-process in a background thread
with its own event loop (Playwright's sync API needs the test's thread free of a running
loop); yields the console URL. Anything the demo raised is re-raised when it stops.
``browser``: Debian's Chromium driven by Playwright, launched by explicit path, headless,
without the sandbox and with background networking off (the tests must not reach out).
``page``: a fresh 1440x900 page whose JavaScript errors fail the test.
``shots``: ``shots("name")`` saves a screenshot to ``test-artifacts/browser/name.png``.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from bot.offloading import Offloader

CHROMIUM = Path("/usr/bin/chromium")
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts" / "browser"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
]
START_TIMEOUT_S = 60.0


class DemoThread:
    """``running_demo(scenario)`` on a thread of its own; ``url`` once started."""

    def __init__(self, scenario: str) -> None:
        self.scenario = scenario
        self.url = ""
        self.error: BaseException | None = None
        self._ready = threading.Event()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._thread = threading.Thread(target=self._run, name="gpunode-demo", daemon=True)

    def _run(self) -> None:
        try:
            asyncio.run(self._main())
        except BaseException as exc:  # handed to the test thread in stop()
            self.error = exc
        finally:
            self._ready.set()

    async def _main(self) -> None:
        from gpunode_sandbox.demo import running_demo

        self._loop = asyncio.get_running_loop()
        self._stop = asyncio.Event()
        async with running_demo(self.scenario) as demo:
            self.url = demo.console_url
            self._ready.set()
            await self._stop.wait()

    def start(self) -> str:
        self._thread.start()
        if not self._ready.wait(START_TIMEOUT_S):
            raise RuntimeError(f"the demo did not start within {START_TIMEOUT_S:.0f} s")
        if self.error is not None or not self.url:
            raise RuntimeError(f"the demo failed to start: {self.error!r}") from self.error
        return self.url

    def stop(self) -> None:
        if self._loop is not None and self._stop is not None and not self._loop.is_closed():
            self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(START_TIMEOUT_S)
        if self._thread.is_alive():
            raise RuntimeError("the demo did not stop within a minute")
        if self.error is not None:
            raise RuntimeError(f"the demo failed while running: {self.error!r}") from self.error


@pytest.fixture
def demo_console() -> Iterator[str]:
    demo = DemoThread("seed")
    url = demo.start()
    try:
        yield url
    finally:
        demo.stop()


# Module scope, not session: while sync_playwright() is open it keeps an asyncio loop
# running in the main thread, which would break every async test collected after it.
@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    if not CHROMIUM.exists():
        pytest.skip(f"{CHROMIUM} is absent: `make system-deps` (part of `make test`) installs it")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(
            executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS
        )
        try:
            yield browser
        finally:
            browser.close()


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    context = browser.new_context(viewport={"width": 1440, "height": 900})
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    try:
        yield page
    finally:
        context.close()
    assert not errors, f"the console page raised JavaScript errors: {errors}"


@pytest.fixture
def shots() -> Callable[..., Path]:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)

    def shoot(name: str, target: Any) -> Path:
        path = ARTIFACTS / f"{name}.png"
        target.screenshot(path=str(path))
        return path

    return shoot


@pytest.fixture(autouse=True, scope="session")
def _demos_share_one_analysis_worker(shared_analysis_worker: Offloader) -> None:
    """This folder's demos analyse and chart in the test process's one worker
    (tests/conftest.py ``shared_analysis_worker``)."""
