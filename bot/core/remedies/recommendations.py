"""Which tier the first message recommends. Pure: no I/O.

The brief evidence message names one tier and its relief; the others stay one click away.
The rule, in order: a plan that relieves the node's shortage on its own beats one that does
not; then a reversible plan beats an irreversible one (an undo exists if the estimate was
wrong); then the plan touching fewer pods; then the larger relief; then the lower tier. A
plan that frees nothing (tier 2 protects, it does not free) is never recommended against a
shortage, and a node that is not short gets no recommendation at all.
"""

from __future__ import annotations

from bot.core.model.actions import ActionPlan


def recommended_plan(plans: list[ActionPlan]) -> ActionPlan | None:
    """The tier to recommend among ``plans``, or None when none frees memory the node is
    short of."""
    candidates = [p for p in plans if p.available and p.shortage_bytes > 0 and p.relieves]
    if not candidates:
        return None
    return min(
        candidates,
        key=lambda p: (
            not p.relieves,
            not p.reversible,
            len(p.blast_radius),
            -p.relief_bytes,
            p.tier,
        ),
    )
