"""Plan identity: a deterministic ``plan_id`` and the one constructor every tier uses.

``plan_id`` = first 12 hex digits of sha256 over the canonical JSON (sorted keys, no spaces)
of node, tier and steps: the same proposal always has the same id, so a repeated click or a
re-diagnosis that proposes the same change is recognised. Pure: no I/O.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from bot.core.actions import ActionPlan, Step, Tier


def plan_id(node: str, tier: int, steps: list[Step]) -> str:
    body = {"node": node, "tier": tier, "steps": [s.model_dump(mode="json") for s in steps]}
    text = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def make_plan(node: str, tier: Tier, steps: list[Step], **fields: Any) -> ActionPlan:
    return ActionPlan(
        plan_id=plan_id(node, tier, steps), tier=tier, node=node, steps=steps, **fields
    )
