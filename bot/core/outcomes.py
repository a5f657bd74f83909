"""What an action that ran actually did, in one word the reports share (pure).

The action's stored ``state`` is its lifecycle (``succeeded``: every step ran and answered).
That is not what it achieved: a tier 1 whose only eviction a PodDisruptionBudget blocked ran
every step, yet evicted nothing. ``action_outcome`` reads the recorded result and says what
happened, so the action's message, the timeline (and the chart marker drawn from it), the
audit and the postmortem never call such an action "succeeded":

- ``applied``: every step ran and every eviction it planned happened (or it evicts nothing);
- ``partly``: some of its evictions happened, others were blocked;
- ``not_applied``: it ran, but none of its evictions happened (each blocked or gone);
- ``failed``: a step failed;
- ``unknown``: a write got no answer and the re-read could not tell whether it landed
  (``result["unanswered"]``); anything else: the lifecycle state as it is (``undone`` ...).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class ActionOutcome(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    outcome: str = Field(description="applied, partly, not_applied, failed, unknown, or the state")
    evicted: int = Field(0, description="pods evicted for real")
    to_evict: int = Field(0, description="pods the action set out to evict (not dry runs)")
    blocked: list[str] = Field(
        default_factory=list, description="'ns/pod (PodDisruptionBudget x: needs n, has m)'"
    )

    @property
    def overstated(self) -> bool:
        """True when the lifecycle says succeeded but the outcome is less."""
        return self.outcome in ("partly", "not_applied")


def _blocked(e: Mapping[str, Any]) -> str:
    pod = f"{e.get('namespace')}/{e.get('name')}"
    pdb = e.get("pdb_name")
    if pdb:
        needs, has = e.get("pdb_needs"), e.get("pdb_has")
        counts = f": needs {needs} healthy, has {has}" if needs is not None else ""
        return f"{pod} (PodDisruptionBudget {pdb}{counts})"
    reason = str(e.get("reason") or e.get("status") or "")
    return f"{pod} ({reason})" if reason else pod


def action_outcome(state: str, result: Mapping[str, Any] | None) -> ActionOutcome:
    """The outcome of an action in ``state`` with the recorded ``result`` (the executor's
    ``StepsResult.as_json()``: ``changes`` and ``evictions``)."""
    evictions = [e for e in (result or {}).get("evictions") or [] if e.get("status") != "dry_run"]
    evicted = sum(1 for e in evictions if e.get("status") == "evicted")
    blocked = [_blocked(e) for e in evictions if e.get("status") != "evicted"]
    outcome = state
    unanswered = (result or {}).get("unanswered") or []
    if state == "failed" and any(u.get("landed") is None for u in unanswered):
        outcome = "unknown"  # a write got no answer and the re-read could not tell
    if state == "succeeded":
        if not evictions or evicted == len(evictions):
            outcome = "applied"
        else:
            outcome = "partly" if evicted else "not_applied"
    return ActionOutcome(outcome=outcome, evicted=evicted, to_evict=len(evictions), blocked=blocked)
