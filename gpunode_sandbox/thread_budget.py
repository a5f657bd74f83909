"""The README story's thread, measured as a person reads it (issue #23 §1: "the whole README
story's thread is at most a third of today's characters").

``measure_story_thread()`` runs the demo story (``gpunode_sandbox.story``: diagnose, tier 3,
then tier 1) against the stand-ins and counts, for every message left in the incident thread
(the root and each reply, after every edit), the characters Slack shows: the blocks rendered as
lines when the message has blocks (Slack shows blocks, and ``text`` only as the notification
fallback), else its ``text``. A shared file (a chart, the exported postmortem) adds only
the text of its message, which is none when the bot shares it without a comment.
"""

from __future__ import annotations

from dataclasses import dataclass

from gpunode_sandbox.demo import running_demo
from gpunode_sandbox.slacksim.blocks import message_text
from gpunode_sandbox.story import CHANNEL, run_story

#: the thread after the README story when issue #23 was filed
BASELINE_CHARS = 38_800
#: the issue's target: at most a third of that
TARGET_CHARS = BASELINE_CHARS // 3


@dataclass(frozen=True)
class ThreadMeasure:
    messages: int
    chars: int
    #: characters per message, in thread order (root first)
    per_message: tuple[int, ...]
    steps: tuple[str, ...]


def read_length(message: dict[str, object]) -> int:
    """Characters a person reads in one message (blocks as lines, else text)."""
    return len(message_text(message))


async def measure_story_thread(scenario: str = "seed") -> ThreadMeasure:
    async with running_demo(scenario) as demo:
        log = await run_story(demo.slack, demo.drain)
        assert log.thread_ts is not None
        thread = demo.slack.messages(CHANNEL, thread_ts=log.thread_ts)
    sizes = tuple(read_length(m) for m in thread)
    return ThreadMeasure(len(thread), sum(sizes), sizes, tuple(log.steps))
