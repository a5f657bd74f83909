"""Plan identity: a deterministic ``plan_id`` and the one constructor every tier uses.

``plan_id`` = first 12 hex digits of sha256 over the canonical JSON (sorted keys, no spaces)
of node, tier and steps: the same proposal always has the same id, so a repeated click or a
re-diagnosis that proposes the same change is recognised. Pure: no I/O.

``relief_target``: what a plan that relieves a shortage aims to free (tier 1's evictions, tier
3's caps): the shortage plus headroom.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from bot.core.model.actions import ActionPlan, Step, Tier

GIB = 1024**3
#: a plan frees the shortage plus this share of it: its relief is an estimate (what the pods
#: hold at collection time), and the rest of the node keeps moving while the plan runs
HEADROOM_SHARE = 0.10
#: ... and at least this much (the kubelet's own hard eviction threshold is memory.available
#: < 100Mi; 1 GiB keeps a node short by a few MiB from a plan that frees exactly that)
HEADROOM_MIN = GIB


def relief_target(shortage: int) -> int:
    """The shortage plus headroom; 0 when nothing is short."""
    if shortage <= 0:
        return 0
    return shortage + max(HEADROOM_MIN, int(shortage * HEADROOM_SHARE))


def plan_id(node: str, tier: int, steps: list[Step]) -> str:
    body = {"node": node, "tier": tier, "steps": [s.model_dump(mode="json") for s in steps]}
    text = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def make_plan(node: str, tier: Tier, steps: list[Step], **fields: Any) -> ActionPlan:
    return ActionPlan(
        plan_id=plan_id(node, tier, steps), tier=tier, node=node, steps=steps, **fields
    )
