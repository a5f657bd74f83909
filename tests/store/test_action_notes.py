"""``Store.note_action``: extra facts about an action kept in its result, state untouched."""

from __future__ import annotations

from datetime import UTC, datetime

from bot.core.model.clusters import DEFAULT_CLUSTER
from bot.store import ActionRecord, Store

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


def _action(action_id: str) -> ActionRecord:
    return ActionRecord(
        action_id=action_id,
        tier=1,
        requester="U0REQ",
        needs_approval=True,
        created_at=T0,
        updated_at=T0,
        cluster=DEFAULT_CLUSTER,
    )


async def test_a_note_is_merged_into_the_result_and_the_state_is_kept(target: str) -> None:
    async with await Store.open(target) as store:
        await store.create_action(_action("A1"))
        assert await store.note_action("A1", {"approval_message_ts": "1.5"})
        assert await store.note_action("A1", {"other": 2})
        record = await store.get_action("A1")
        assert record is not None
        assert record.state == "requested"
        assert record.result == {"approval_message_ts": "1.5", "other": 2}


async def test_a_note_on_an_unknown_action_says_so(target: str) -> None:
    async with await Store.open(target) as store:
        assert not await store.note_action("nope", {"x": 1})
