from __future__ import annotations

from typing import Any

import pytest

from bot.errors import SlackError
from bot.slack.blockkit import validate_blocks


def _section(text: str) -> dict[str, Any]:
    return {"type": "section", "text": {"type": "mrkdwn", "text": text}}


def test_valid_blocks_pass() -> None:
    validate_blocks(
        [{"type": "header", "text": {"type": "plain_text", "text": "hi"}}, _section("x")]
    )


@pytest.mark.parametrize(
    ("blocks", "needle"),
    [
        ([{"type": "no_such_block"}], "unknown block type"),
        ([_section("x" * 3001)], "3000"),
        ([_section("x")] * 51, "51 blocks"),
        (
            [{"type": "section", "fields": [{"type": "mrkdwn", "text": "y" * 2001}]}],
            "field 0",
        ),
        ([_section("z" * 2900)] * 5, "characters of text"),
        (
            [
                {
                    "type": "actions",
                    "elements": [
                        {
                            "type": "button",
                            "action_id": "a",
                            "text": {"type": "plain_text", "text": "b" * 76},
                        }
                    ],
                }
            ],
            "75",
        ),
        ([{"type": "header", "text": {"type": "plain_text", "text": "h" * 151}}], "150"),
    ],
)
def test_what_slack_would_refuse_is_rejected(blocks: list[dict[str, Any]], needle: str) -> None:
    with pytest.raises(SlackError) as err:
        validate_blocks(blocks)
    assert needle in str(err.value)
    assert err.value.code == "invalid_blocks"
