"""Every :shortcode: the bot's templates use is one the console can draw as an emoji."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]


def test_the_console_knows_every_emoji_the_templates_use() -> None:
    used = set()
    for path in (ROOT / "templates").rglob("*.j2"):
        used |= set(re.findall(r":([a-z0-9_+-]+):", path.read_text(encoding="utf-8")))
    script = (ROOT / "gpunode_sandbox/slacksim/static/mrkdwn.js").read_text(encoding="utf-8")
    table = script[
        script.index("const EMOJI = {") : script.index("};", script.index("const EMOJI"))
    ]
    known = set(re.findall(r'(?:^|[\s,{])"?([a-z0-9_+-]+)"?:\s*"', table))
    # Jinja's own ':' in slices or dicts is not a shortcode: only words found as :word: pairs
    assert used - known == set()
