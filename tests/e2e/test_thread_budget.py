"""The whole README story's thread is at most a third of the characters it had before the
brief first message and the change-only action messages (38,800), counted as a person reads it."""

from __future__ import annotations

import pytest

from gpunode_sandbox.thread_budget import TARGET_CHARS, measure_story_thread

pytestmark = pytest.mark.slow


async def test_the_readme_story_thread_is_at_most_a_third_of_what_it_was() -> None:
    measured = await measure_story_thread()

    assert measured.chars <= TARGET_CHARS, (
        f"{measured.chars} characters in {measured.messages} messages "
        f"(per message: {measured.per_message})"
    )
    # the story ran to its end: the timeline export is the last step
    assert measured.steps[-1].startswith("timeline exported")
