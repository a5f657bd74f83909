"""End-to-end fixtures: the real bot over HTTP between the Slack and Kubernetes stand-ins.

``demo``: ``running_demo("seed")`` (bot's aiohttp app on a free port, SlackSim, KubeSim).
Helpers read the stand-ins' recorded state; nothing here reaches into the bot's internals
except its store, which is what an operator's ``gpunode status`` reads too.
"""

from __future__ import annotations

import gc
import json
import os
import sys
import threading
import time
from collections.abc import AsyncIterator
from typing import Any

import pytest

from bot.core.reporting.records import ActionRecord
from bot.offloading import Offloader
from bot.telemetry.lag import LoopLag
from gpunode_sandbox.demo import Demo, running_demo
from gpunode_sandbox.slacksim import SlackSim
from gpunode_sandbox.slacksim.blocks import message_text
from gpunode_sandbox.story import CHANNEL, find_button

NODE = "gpu-node-01"


#: event-loop stalls at least this long are listed in a failed test's output
STALL_SHOWN_S = 0.5
#: ... and the loop thread's stack is sampled while one lasts this long, every so often
STALL_SAMPLED_S = 1.0
#: frames kept of a sample, innermost first
SAMPLE_DEPTH = 16


class _StallSampler:
    """A thread that samples the loop thread's stack while the loop has not ticked for
    ``STALL_SAMPLED_S``: what held it, shown in a failed test's output. Frames are read
    from ``sys._current_frames`` and named by hand (``traceback``'s formatting parses
    source with ``ast``, not safe beside another thread's ``ast.parse`` on Python 3.11)."""

    def __init__(self) -> None:
        self.loop_thread = threading.get_ident()
        self.ticked = time.monotonic()
        self.samples: list[tuple[float, list[str]]] = []
        #: collections of STALL_SHOWN_S or more: (generation, seconds, objects it walked)
        self.collections: list[tuple[int, float, int]] = []
        self._collecting = 0.0
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._run, name="stall-sampler", daemon=True)

    def start(self) -> None:
        gc.callbacks.append(self._collected)
        self._thread.start()

    def stop(self) -> None:
        gc.callbacks.remove(self._collected)
        self._done.set()
        self._thread.join(timeout=2)

    def _collected(self, phase: str, info: dict[str, int]) -> None:
        """A garbage collection holds the interpreter lock from start to stop: a long one
        (the worker's heap grown by earlier tests) stalls the loop with no frame to show."""
        if phase == "start":
            self._collecting = time.monotonic()
        elif self._collecting:
            took = time.monotonic() - self._collecting
            if took >= STALL_SHOWN_S:
                walked = len(gc.get_objects(info["generation"]))
                self.collections.append((info["generation"], took, walked))

    def _run(self) -> None:
        began = time.monotonic()
        while not self._done.wait(0.25):
            late = time.monotonic() - self.ticked
            if late < STALL_SAMPLED_S or len(self.samples) >= 40:
                continue
            frame = sys._current_frames().get(self.loop_thread)
            stack: list[str] = []
            while frame is not None and len(stack) < SAMPLE_DEPTH:
                code = frame.f_code
                stack.append(f"{code.co_filename}:{frame.f_lineno} {code.co_name}")
                frame = frame.f_back
            self.samples.append((time.monotonic() - began, stack))


@pytest.fixture(autouse=True)
async def _loop_stalls() -> AsyncIterator[None]:
    """The bot and both stand-ins share the test's event loop: a timeout under load is
    either the loop stalled (listed here, with the machine's load and the loop thread's
    stack sampled during each stall of a second or more, in a failed test's captured
    output) or something that waited without it."""
    began = time.monotonic()
    stalls: list[tuple[float, float]] = []
    sampler = _StallSampler()

    def seen(s: float) -> None:
        sampler.ticked = time.monotonic()
        if s >= STALL_SHOWN_S:
            stalls.append((time.monotonic() - began, s))

    lag = LoopLag(seen, interval_s=0.05)
    lag.start()
    sampler.start()
    yield
    await lag.stop()
    sampler.stop()
    shown = ", ".join(f"{s:.2f} s at +{t:.1f} s" for t, s in stalls) or "none"
    load = "/".join(f"{x:.1f}" for x in os.getloadavg())
    print(f"event loop: longest stall {lag.max_s:.3f} s; stalls >= {STALL_SHOWN_S} s: {shown}")
    print(f"load average {load} on {os.cpu_count()} CPUs")
    for generation, took, walked in sampler.collections:
        print(f"garbage collection of generation {generation}: {took:.2f} s ({walked} objects)")
    for at, stack in sampler.samples:
        print(f"loop thread at +{at:.2f} s, stalled:")
        print("\n".join(f"  {line}" for line in stack))


@pytest.fixture
async def demo() -> AsyncIterator[Demo]:
    async with running_demo("seed") as d:
        yield d


def text_of(msg: dict[str, Any]) -> str:
    return str(msg.get("text", "")) + json.dumps(msg.get("blocks", []))


def incident_roots(sim: SlackSim) -> list[dict[str, Any]]:
    """Top-level bot messages in the incident channel that are incident roots."""
    return [m for m in sim.messages(CHANNEL) if m.get("bot_id") and "INC-" in text_of(m)]


def failed_chat_calls(sim: SlackSim) -> list[Any]:
    return [c for c in sim.calls if c.method.startswith("chat.") and not c.ok]


async def diagnose(demo: Demo, node: str = NODE, *, user: str = "U0ALICE") -> str:
    """Run ``/gpunode diagnose``; the incident thread's ts."""
    result = await demo.slack.slash_command(user, CHANNEL, f"diagnose {node}")
    assert result.status == 200, result.body
    await demo.drain()
    roots = incident_roots(demo.slack)
    assert roots, "no incident thread"
    return str(roots[-1]["ts"])


def thread(demo: Demo, root_ts: str) -> list[dict[str, Any]]:
    return demo.slack.messages(CHANNEL, thread_ts=root_ts)


async def press(demo: Demo, root_ts: str, user: str, action_id: str) -> None:
    """Click the newest ``action_id`` button of the thread as ``user`` and wait for the work."""
    found = find_button(thread(demo, root_ts), action_id)
    assert found is not None, f"no {action_id} button in the thread"
    ts, button = found
    result = await demo.slack.click(user, CHANNEL, ts, action_id, value=button.get("value"))
    assert result.status == 200, result.body
    await demo.drain()


def modal_values(view: dict[str, Any], edits: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The modal's inputs as a person leaves them: initial values, then ``edits``."""
    out: dict[str, dict[str, Any]] = {}
    for block in view.get("blocks", []):
        if block.get("type") != "input":
            continue
        bid, el = block["block_id"], block["element"]
        value = edits.get(bid, el.get("initial_value"))
        if el["type"] == "checkboxes":
            out[bid] = {el["action_id"]: [el["options"][0]["value"]] if value else []}
        else:
            out[bid] = {el["action_id"]: value}
    return out


async def submit_modal(
    demo: Demo, user: str, edits: dict[str, Any]
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Submit the user's top modal with ``edits``: (the view as shown, errors left on it)."""
    views = demo.slack.open_views(user)
    assert views, f"no modal open for {user}"
    view = views[-1]
    result = await demo.slack.submit_view(user, view["id"], modal_values(view, edits))
    assert result.status == 200, result.body
    await demo.drain()
    left = demo.slack.open_views(user)
    return view, (left[-1].get("errors", {}) if left else {})


def ephemeral_texts(sim: SlackSim, user: str) -> list[str]:
    return [text_of(m) for m in sim.ephemerals(user)]


#: the tier-3 modal's edits the write-fault tests submit
TIER3_EDITS = {"memory_limit": "32Gi", "memory_request": "28Gi", "accept_oom": True}


async def request_tier(
    demo: Demo, root_ts: str, tier: int, *, user: str = "U0ALICE"
) -> ActionRecord:
    """Press the tier button and submit its modal; the new action's record (dry run done)."""
    incident = (await demo.runtime.store.open_incidents(NODE))[0]
    known = {a.action_id for a in await demo.runtime.store.actions_for_incident(incident.id)}
    await press(demo, root_ts, user, f"gpunode_tier{tier}")
    edits = TIER3_EDITS if tier == 3 else {}
    _, errors = await submit_modal(demo, user, {"reason": "memory incident", **edits})
    assert errors == {}
    [record] = [
        a
        for a in await demo.runtime.store.actions_for_incident(incident.id)
        if a.action_id not in known
    ]
    return record


async def shown(demo: Demo, record: ActionRecord) -> tuple[ActionRecord, str, dict[str, Any]]:
    """(fresh record, the text of its thread message, the message)."""
    fresh = await demo.runtime.store.get_action(record.action_id)
    assert fresh is not None and fresh.message_ts is not None
    msg = demo.slack.message(CHANNEL, fresh.message_ts)
    assert msg is not None
    return fresh, message_text(msg), msg


@pytest.fixture(autouse=True, scope="session")
def _demos_share_one_analysis_worker(shared_analysis_worker: Offloader) -> None:
    """This folder's demos analyse and chart in the test process's one worker
    (tests/conftest.py ``shared_analysis_worker``)."""
