"""Client-side Block Kit validation: what Slack would refuse, caught before sending.

``slack_sdk``'s models validate deeply only through ``to_dict()``, return ``None`` for an
unknown block type instead of raising, and do not check the 50-block message limit, the
2000-character field limit or the cumulative ~12k ``msg_blocks_too_long`` limit
(reference/slack.md section 3). ``validate_blocks`` does all of it and raises
``bot.errors.SlackError`` (code ``invalid_blocks``) with the block index in the message.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from slack_sdk.errors import SlackObjectFormationError
from slack_sdk.models.blocks import Block

from bot.errors import SlackError
from bot.render.blocks import block_text_size

MAX_MESSAGE_BLOCKS = 50
MAX_MODAL_BLOCKS = 100
MAX_FIELD_CHARS = 2000
#: Slack's undocumented cumulative limit is ~12-13k characters (bolt-js#2509); 12,000 is
#: the conservative edge.
MAX_TOTAL_TEXT = 12_000


def _fail(message: str) -> SlackError:
    return SlackError(f"invalid Block Kit: {message}", code="invalid_blocks")


def validate_blocks(blocks: Sequence[dict[str, Any]], *, surface: str = "message") -> None:
    """Raise ``SlackError`` if Slack would refuse ``blocks``; return None if they are fine."""
    limit = MAX_MESSAGE_BLOCKS if surface == "message" else MAX_MODAL_BLOCKS
    if not blocks and surface != "message":
        raise _fail("a view needs at least one block")
    if len(blocks) > limit:
        raise _fail(f"{len(blocks)} blocks, at most {limit} allowed in a {surface}")
    for i, raw in enumerate(blocks):
        if not isinstance(raw, dict):
            raise _fail(f"block {i} is not an object")
        try:
            parsed = Block.parse(raw)
        except (SlackObjectFormationError, TypeError, KeyError, ValueError) as exc:
            raise _fail(f"block {i} ({raw.get('type')!r}): {exc}") from exc
        if parsed is None:
            raise _fail(f"block {i}: unknown block type {raw.get('type')!r}")
        try:
            parsed.to_dict()
        except (SlackObjectFormationError, TypeError, KeyError, ValueError) as exc:
            raise _fail(f"block {i} ({raw.get('type')!r}): {exc}") from exc
        for j, field in enumerate(raw.get("fields") or []):
            text = field.get("text", "") if isinstance(field, dict) else ""
            if len(text) > MAX_FIELD_CHARS:
                raise _fail(f"block {i} field {j}: {len(text)} chars, at most {MAX_FIELD_CHARS}")
    total = block_text_size(list(blocks))
    if surface == "message" and total > MAX_TOTAL_TEXT:
        raise _fail(f"{total} characters of text in blocks, at most about {MAX_TOTAL_TEXT}")
