"""What the use cases answer, as data (pure): codes and parameters, never sentences.

A use case returns (or hands its ``ThreadPort``) one of these outcomes; the presenter of each
surface (``bot.slack.presenter``, ``bot.cli.presenter``) picks the reader's language and words
it through ``bot.render``. So a refusal reads in Chinese for a zh-CN reader, and a use-case
test asserts the outcome (``Refused("only_requester_cancels")``), not an English sentence.

- ``Refused(code, params)``: why not; the codes are ``REFUSALS`` (a policy ``Deny`` carries
  its own code, one of ``bot.core.policy.DENIALS``);
- ``Notice(key, params)``: a short message (``diagnose_started``, ``status_list``...).

What an action that ran actually did, in one word the reports share:

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
from typing import Any, Literal

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field

from bot.core.evidence import EvidenceBundle
from bot.core.findings import Diagnosis

#: every refusal a use case gives, besides the policy's denials (``bot.core.policy.DENIALS``)
#: and a failed step's error code; each has its words in ``templates/slack/refusals.j2``
REFUSALS = frozenset(
    {
        "no_policy",  # no policy file is loaded: nothing is allowed
        "plan_not_current",  # the plan behind the button is not the incident's latest
        "action_unknown",  # the action id on the button is not in the store
        "approval_unknown",
        "not_the_requester",  # {requester}: only they confirm their own request
        "action_already",  # {state}: Apply on an action that is no longer requested
        "action_marked_meanwhile",  # {state}: it changed state while this click ran
        "action_will_not_run",  # {state}: approved, but it was cancelled or expired
        "nothing_to_cancel",  # {state}
        "only_requester_cancels",
        "cancel_too_late",  # it started meanwhile
        "nothing_to_undo",  # {state}
        "nothing_undoable",  # it changed nothing that can be restored
        "undo_conflict",  # {detail}: someone changed the target since (bot.core.staleness)
        "undo_reread_failed",  # {code, message}: the targets could not be re-read
        "undo_in_progress",
        "vote_self_approval_rejected",
        "vote_not_eligible",
        "vote_expired",
        "vote_already_final",
        "vote_already_counted",
    }
)


class Refused(BaseModel):
    """Why a click or a command was refused: a code and its parameters (raw values)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: Literal["refused"] = "refused"
    code: str
    params: dict[str, Any] = Field(default_factory=dict)


class Notice(BaseModel):
    """A short message by key (``templates/slack/notices.j2``), with raw parameters."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: Literal["notice"] = "notice"
    key: str
    params: dict[str, Any] = Field(default_factory=dict)


class RootLine(BaseModel):
    """The incident thread's root message: its status, the verdict once there is one, and
    the step under way (``opening``, ``running_job``, ``failed`` with ``failure_code``)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: Literal["root"] = "root"
    incident_id: str
    node: str = Field(description="as messages name it: [cluster/]node")
    state: str
    opened_by: str
    progress: Literal["opening", "running_job", "failed"] | None = None
    failure_code: str = ""
    diagnosis: Diagnosis | None = None


class Diagnosed(BaseModel):
    """A diagnosis for the incident thread: the presenter posts its evidence, talking
    points and actions (and links the node's dashboard for ``dashboard``: url, from, to)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: Literal["diagnosed"] = "diagnosed"
    incident_id: str
    diagnosis: Diagnosis
    bundle: EvidenceBundle | None = None
    dashboard: tuple[str, AwareDatetime, AwareDatetime] | None = None


#: what a use case tells a person or posts in a thread
Told = Refused | Notice | RootLine | Diagnosed


def refused(code: str, /, **params: Any) -> Refused:
    return Refused(code=code, params=params)


def notice(key: str, /, **params: Any) -> Notice:
    return Notice(key=key, params=params)


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
