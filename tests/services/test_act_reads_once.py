"""A tier-3 Apply reads what it acts on once and passes it along: the action (to find its
cluster, then the same record through the steps), its incident (for the thread, the messages
it edits and the incident's state; the root line after the Apply moved it to mitigating is
drawn from the incident as the store wrote it, not read again) and the evidence (the
staleness check). The re-diagnosis and the rollout watch after the action run in the
background and are not counted here.

Counted where the reads land: calls on the real store of the use-case world."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

from tests.services.world import CHANNEL, REQ, World

EDITS: dict[str, Any] = {"memory_limit": "70Gi", "memory_request": "60Gi"}
READS = ("get_incident", "get_action", "latest_snapshot")


def _count_reads(world: World, monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    reads: Counter[str] = Counter()
    for name in READS:
        original = getattr(world.store, name)

        async def counted(*args: Any, _name: str = name, _original: Any = original) -> Any:
            reads[_name] += 1
            return await _original(*args)

        monkeypatch.setattr(world.store, name, counted)
    return reads


async def test_a_tier3_apply_reads_its_incident_action_and_evidence_once(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    await world.diagnosed()
    action_id = await world.request(3, **EDITS)
    reads = _count_reads(world, monkeypatch)

    await world.act.apply(action_id=action_id, user=REQ, channel=CHANNEL)
    counted = dict(reads)  # before the background re-diagnosis and watch begin

    assert await world.state(action_id) == "succeeded"
    # the incident once for the Apply, once more after it moved to mitigating (the root line)
    assert counted == {"get_action": 1, "get_incident": 1, "latest_snapshot": 1}
