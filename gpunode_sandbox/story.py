"""The demo story, driven through the Slack stand-in exactly as people would click it.

1. Alice (on-call) runs ``/gpunode diagnose gpu-node-01``: an incident thread opens with
   evidence, talking points and tier buttons.
2. Alice presses tier 3, edits the proposed caps, dry-runs, applies; the bot re-diagnoses and
   posts the before/after diff.
3. Alice presses tier 1. When the node is still at risk, she requests it, Bob (approver)
   approves, the node is cordoned and the fewest pods that cover the shortage are evicted.
   When tier 3 already gave the shortage back, the bot answers that there is nothing to do
   (issue #20: no tier on a node that is not at risk) and the story goes on.
4. Alice exports the timeline into the thread.
Used by ``gpunode demo --script`` and by the end-to-end tests.
"""

from __future__ import annotations

import json
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from gpunode_sandbox.slacksim import SlackSim

CHANNEL = "C0INCIDENT"
ALICE, BOB = "U0ALICE", "U0BOB"
Drain = Callable[[], Awaitable[None]]


class StoryError(RuntimeError):
    """The story could not go on: says which step and what was missing."""


@dataclass
class StoryLog:
    steps: list[str] = field(default_factory=list)
    thread_ts: str | None = None
    incident_id: str | None = None


def find_button(
    messages: list[dict[str, Any]], action_id: str
) -> tuple[str, dict[str, Any]] | None:
    """Newest message holding a button with ``action_id``: (message ts, button)."""
    for msg in reversed(messages):
        for block in msg.get("blocks") or []:
            if block.get("type") != "actions":
                continue
            for el in block.get("elements", []):
                if el.get("action_id") == action_id:
                    return str(msg["ts"]), el
    return None


def _modal_values(view: dict[str, Any], overrides: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Form values as a person leaves them: initial values, then the person's edits."""
    out: dict[str, dict[str, Any]] = {}
    for block in view.get("blocks", []):
        if block.get("type") != "input":
            continue
        bid, el = block["block_id"], block["element"]
        value = overrides.get(bid, el.get("initial_value"))
        if el["type"] == "checkboxes":
            out[bid] = {el["action_id"]: [el["options"][0]["value"]] if value else []}
        else:
            out[bid] = {el["action_id"]: value}
    return out


async def _thread(sim: SlackSim, log: StoryLog) -> list[dict[str, Any]]:
    assert log.thread_ts is not None
    return sim.messages(CHANNEL, thread_ts=log.thread_ts)


async def _press(sim: SlackSim, log: StoryLog, user: str, action_id: str, drain: Drain) -> None:
    found = find_button(await _thread(sim, log), action_id)
    if found is None:
        raise StoryError(f"no {action_id} button in the thread")
    ts, button = found
    result = await sim.click(user, CHANNEL, ts, action_id, value=button.get("value"))
    if result.status != 200:
        raise StoryError(f"clicking {action_id} answered HTTP {result.status}")
    await drain()


#: the bot's words when Slack's 3 s to open a form after a click ran out (a busy bot): the
#: person presses the button again (``bot.services.requesting``, acting.j2 form_expired)
FORM_EXPIRED = "Press the button again."


async def _press_for_form(
    sim: SlackSim, log: StoryLog, user: str, action_id: str, drain: Drain
) -> None:
    """Press a button that opens a form; pressed once more, as a person would, when the bot
    said the form opened too late (a loaded machine can hold the bot past Slack's 3 s)."""
    told = len(sim.ephemerals(user))
    await _press(sim, log, user, action_id, drain)
    said = [json.dumps(m) for m in sim.ephemerals(user)[told:]]
    if not sim.open_views(user) and any(FORM_EXPIRED in m for m in said):
        log.steps.append(f"{action_id}: the form opened too late for Slack; pressed again")
        await _press(sim, log, user, action_id, drain)


async def _confirm(
    sim: SlackSim, user: str, reason: str, drain: Drain, edits: dict[str, Any] | None = None
) -> dict[str, Any]:
    views = sim.open_views(user)
    if not views:
        raise StoryError(f"no confirmation modal opened for {user}")
    view = views[-1]
    overrides = {"reason": reason, **(edits or {})}
    result = await sim.submit_view(user, view["id"], _modal_values(view, overrides))
    if result.status != 200:
        raise StoryError(f"submitting the modal answered HTTP {result.status}")
    await drain()
    return view


async def _tier3(sim: SlackSim, log: StoryLog, drain: Drain) -> None:
    reason = "preprocessing is starving the node"
    edits: dict[str, Any] = {"omp_num_threads": "4", "accept_oom": False}
    await _press_for_form(sim, log, ALICE, "gpunode_tier3", drain)
    await _confirm(sim, ALICE, reason, drain, edits)
    if sim.open_views(ALICE):  # the modal stayed open: read its errors, accept the OOM
        errors = sim.open_views(ALICE)[-1].get("errors", {})
        if "accept_oom" not in errors:
            raise StoryError(f"tier 3 modal refused: {errors}")
        await _confirm(sim, ALICE, reason, drain, {**edits, "accept_oom": True})
        log.steps.append("tier 3: the limit was below the working set; OOM accepted explicitly")
    await _press(sim, log, ALICE, "gpunode_apply", drain)
    log.steps.append("tier 3 applied")


async def run_story(sim: SlackSim, drain: Drain, *, node: str = "gpu-node-01") -> StoryLog:
    log = StoryLog()
    await sim.slash_command(ALICE, CHANNEL, f"diagnose {node}")
    await drain()
    roots = [m for m in sim.messages(CHANNEL) if node in json.dumps(m.get("blocks", []))]
    if not roots:
        raise StoryError("the diagnose command opened no incident thread")
    log.thread_ts = str(roots[-1]["ts"])
    log.steps.append(f"diagnosed {node}: thread {log.thread_ts}")

    # tier 3: edit the proposed caps (OMP_NUM_THREADS=4); accept an OOM only when asked to
    if find_button(await _thread(sim, log), "gpunode_tier3") is None:
        log.steps.append("tier 3 not offered (the diagnosis message says why)")
    else:
        await _tier3(sim, log, drain)

    # tier 1: request, then approval by another person, while the node is still at risk
    if find_button(await _thread(sim, log), "gpunode_tier1") is None:
        # the current state (edited in place by the re-diagnosis) offers no tier 1 button
        thread = json.dumps(await _thread(sim, log))
        if "Nothing to do" in thread:
            log.steps.append("tier 1 not offered: the node is no longer at risk, nothing to do")
        else:
            log.steps.append("tier 1 not offered (see the Mitigation tiers message for why)")
        return await _export(sim, log, drain)
    await _press_for_form(sim, log, ALICE, "gpunode_tier1", drain)
    if not sim.open_views(ALICE):
        log.steps.append("tier 1 not offered: the node is no longer at risk, nothing to do")
    else:
        await _confirm(sim, ALICE, "stop the cascade while preprocessing restarts", drain)
        await _press(sim, log, ALICE, "gpunode_apply", drain)
        await _press(sim, log, BOB, "gpunode_approve", drain)
        log.steps.append("tier 1 approved by Bob and executed")

    return await _export(sim, log, drain)


async def _export(sim: SlackSim, log: StoryLog, drain: Drain) -> StoryLog:
    """Alice exports the timeline into the thread."""
    assert log.thread_ts is not None
    root = sim.message(CHANNEL, log.thread_ts) or {}
    found = re.search(r"INC-\d+", json.dumps(root.get("blocks", [])))
    log.incident_id = found.group(0) if found else None
    shared = {f["id"] for f in sim.files(CHANNEL)}  # the charts posted so far
    await sim.slash_command(ALICE, CHANNEL, f"timeline {log.incident_id or ''}".strip())
    await drain()
    uploaded = [
        f["name"]
        for f in sim.files(CHANNEL)
        if f["thread_ts"] == log.thread_ts and f["id"] not in shared
    ]
    if not uploaded:
        raise StoryError("the timeline command uploaded no file into the thread")
    log.steps.append(f"timeline exported: {', '.join(uploaded)}")
    return log
