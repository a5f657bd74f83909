"""The demo story's postmortem draft, exported through Slack exactly as Alice does it.

``export_story_postmortem(dest)`` runs the whole demo story (``gpunode_sandbox.story``) against
the stand-ins, then saves every file the timeline command shared into the thread under
``dest`` (the charts posted along the way, then the export's charts, Markdown and HTML) and
returns them by name, in the order they were shared; the thread's text goes to
``dest / THREAD``.
"""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path

from gpunode_sandbox.demo import running_demo
from gpunode_sandbox.story import CHANNEL, run_story

#: the thread's text as the console shows it, saved beside the files
THREAD = "thread.txt"


async def export_story_postmortem(dest: Path) -> dict[str, bytes]:
    async with running_demo("seed") as demo:
        log = await run_story(demo.slack, demo.drain)
        files = {
            f["name"]: f["content"]
            for f in demo.slack.files(CHANNEL)
            if f["thread_ts"] == log.thread_ts
        }
        assert log.thread_ts is not None
        thread = demo.slack.text_of_thread(CHANNEL, log.thread_ts)
    await asyncio.to_thread(_save, dest, files, thread)
    return files


def _save(dest: Path, files: dict[str, bytes], thread: str) -> None:
    shutil.rmtree(dest, ignore_errors=True)  # only this run's files (names carry times)
    dest.mkdir(parents=True)
    for name, content in files.items():
        (dest / name).write_bytes(content)
    (dest / THREAD).write_text(thread, encoding="utf-8")  # not a shared file: the thread's text
