"""Thread-size benchmark (issue #23 §1): the characters a person reads in the incident thread
after the README story (diagnose, tier 3, then tier 1, timeline), through the Slack stand-in.

Counted per message as Slack shows it: blocks rendered as lines, else the text
(``gpunode_sandbox.thread_budget``). Baseline: 38,800 characters when the issue was filed;
target: a third of it (12,933).

Usage: ``python bench/thread.py [--scenario seed]``.
Last line: ``{"bench": "thread", "metric": "thread_chars", ...}``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from gpunode_sandbox.thread_budget import BASELINE_CHARS, TARGET_CHARS, measure_story_thread


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scenario", default="seed")
    args = parser.parse_args()
    measured = asyncio.run(measure_story_thread(args.scenario))
    for step in measured.steps:
        print(f"step: {step}")
    print("chars per message:", ", ".join(str(n) for n in measured.per_message))
    print(
        json.dumps(
            {
                "bench": "thread",
                "metric": "thread_chars",
                "value": measured.chars,
                "baseline": BASELINE_CHARS,
                "ratio": round(measured.chars / BASELINE_CHARS, 3),
                "target": TARGET_CHARS,
                "messages": measured.messages,
                "scenario": args.scenario,
            }
        )
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
