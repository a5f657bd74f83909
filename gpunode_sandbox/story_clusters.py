"""The two-cluster demo story, driven through the Slack stand-in as people would click it.

The bot serves ``prod-eu`` (the default cluster) and ``prod-us``, each its own Kubernetes
stand-in with its own scenario.
1. Alice runs ``/gpunode top``: GPU nodes of both clusters, ranked together, each row
   naming its cluster.
2. Alice runs ``/gpunode diagnose prod-us/gpu-node-01``: the prod-us incident thread.
3. Erin, an SRE of prod-eu only, presses a tier button in the prod-us thread: refused,
   saying the role covers prod-eu only (and audited).
4. The one-cluster story runs on ``prod-eu/gpu-node-01`` (same node name, other cluster,
   other incident): tier 3 edited and applied, tier 1 approved by Bob, timeline exported.
5. prod-us stops answering (every request delayed far past its timeout): ``top`` answers
   within prod-us' timeout with prod-eu's rows and names prod-us as left out.
Used by ``gpunode demo --script`` and by the end-to-end tests.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field

from gpunode_sandbox.kubesim import KubeSim
from gpunode_sandbox.slacksim import SlackSim
from gpunode_sandbox.slacksim.blocks import message_text
from gpunode_sandbox.story import (
    ALICE,
    CHANNEL,
    Drain,
    StoryError,
    StoryLog,
    find_button,
    run_story,
)

ERIN = "U0ERIN"
#: how long the hung cluster's stand-in holds every answer: far past its timeout
HUNG_DELAY_S = 60.0


@dataclass
class ClustersLog:
    steps: list[str] = field(default_factory=list)
    #: (heading, text) in the order they happened: the transcript
    sections: list[tuple[str, str]] = field(default_factory=list)
    us_thread: str | None = None
    eu: StoryLog | None = None


def _newest_ephemeral(sim: SlackSim, user: str, before: int) -> str:
    fresh = sim.ephemerals(user)[before:]
    if not fresh:
        raise StoryError(f"{user} was told nothing")
    return "\n\n".join(message_text(m) for m in fresh)


async def _top(sim: SlackSim, drain: Drain, text: str = "top") -> str:
    before = len(sim.ephemerals(ALICE))
    await sim.slash_command(ALICE, CHANNEL, text)
    await drain()
    # the ack ("On it") and the ranking: the ranking is the last one
    return message_text(sim.ephemerals(ALICE)[before:][-1])


async def run_clusters_story(
    sim: SlackSim, drain: Drain, kubes: dict[str, KubeSim], *, first: str, second: str
) -> ClustersLog:
    log = ClustersLog()
    ranking = await _top(sim, drain)
    if f"{first} " not in ranking or f"{second} " not in ranking:
        raise StoryError(f"top did not rank both clusters: {ranking}")
    log.sections.append(("Alice: /gpunode top", ranking))
    log.steps.append(f"top ranked the GPU nodes of {first} and {second} together")

    node = f"{second}/gpu-node-01"
    await sim.slash_command(ALICE, CHANNEL, f"diagnose {node}")
    await drain()
    roots = [m for m in sim.messages(CHANNEL) if node in json.dumps(m.get("blocks", []))]
    if not roots:
        raise StoryError(f"diagnose {node} opened no incident thread")
    log.us_thread = str(roots[-1]["ts"])
    log.sections.append(
        (f"Alice: /gpunode diagnose {node}", sim.text_of_thread(CHANNEL, log.us_thread))
    )
    log.steps.append(f"diagnosed {node}: thread {log.us_thread}")

    found = find_button(sim.messages(CHANNEL, thread_ts=log.us_thread), "gpunode_tier2")
    if found is None:
        raise StoryError(f"no tier 2 button in the {second} thread")
    before = len(sim.ephemerals(ERIN))
    ts, button = found
    await sim.click(ERIN, CHANNEL, ts, "gpunode_tier2", value=button.get("value"))
    await drain()
    refused = _newest_ephemeral(sim, ERIN, before)
    if sim.open_views(ERIN):
        raise StoryError(f"Erin ({first} only) got a confirmation modal for a {second} plan")
    log.sections.append((f"Erin ({first} only) presses tier 2 in the {second} thread", refused))
    log.steps.append(f"Erin's click on the {second} incident was refused: her role is {first}'s")

    log.eu = await run_story(sim, drain, node=f"{first}/gpu-node-01")
    assert log.eu.thread_ts is not None
    log.sections.append(
        (
            f"Alice: /gpunode diagnose {first}/gpu-node-01, then the tiers",
            sim.text_of_thread(CHANNEL, log.eu.thread_ts),
        )
    )
    log.steps += [f"{first}: {step}" for step in log.eu.steps]

    kubes[second].faults.add("*", ".", delay_s=HUNG_DELAY_S, times=-1)
    try:
        started = time.monotonic()
        ranking = await _top(sim, drain)
        took = time.monotonic() - started
    finally:
        kubes[second].faults.clear()
    if "left out" not in ranking or f"{second} could not be reached" not in ranking:
        raise StoryError(f"top did not name the hung cluster: {ranking}")
    log.sections.append((f"{second} stops answering; Alice: /gpunode top", ranking))
    log.steps.append(
        f"with {second} hung ({HUNG_DELAY_S:g}s per answer), top answered in {took:.1f}s "
        f"with {first}'s rows and named {second} as left out"
    )
    return log


def transcript(log: ClustersLog) -> str:
    """The story as text: each section under its heading, then the steps."""
    parts: list[str] = []
    for heading, text in log.sections:
        parts += [f"=== {heading} ===", text, ""]
    parts += [f"✓ {step}" for step in log.steps]
    return "\n".join(parts)
