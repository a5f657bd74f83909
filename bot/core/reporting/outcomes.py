"""What the use cases answer, as data (pure): codes and parameters, never sentences.

A use case returns (or hands its ``ThreadPort``) one of these outcomes; the presenter of each
surface (``bot.slack.presenter``, ``bot.cli.presenter``) picks the reader's language and words
it through ``bot.render``. So a refusal reads in Chinese for a zh-CN reader, and a use-case
test asserts the outcome (``Refused("only_requester_cancels")``), not an English sentence.

- ``Refused(code, params)``: why not; the codes are ``REFUSALS`` (a policy ``Deny`` carries
  its own code, one of ``bot.core.governance.policy.DENIALS``);
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

from bot.core.diagnosis.findings import Diagnosis
from bot.core.governance.approvals import ApprovalRequest
from bot.core.model.actions import ActionPlan, Step
from bot.core.model.changes import Change, EvictionOutcome
from bot.core.model.clusters import NodeRef
from bot.core.model.evidence import EvidenceBundle
from bot.core.remedies.prevention import KitSource, PreventionParams
from bot.core.remedies.watching import RolloutProgress, Verdict
from bot.core.reporting.diffing import DiagnosisDiff

#: every refusal a use case gives, besides the policy's denials
#: (``bot.core.governance.policy.DENIALS``)
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
        "plan_stale",  # {reason, ...}: the world moved since the evidence (staleness.STALE_REASONS)
        "undo_conflict",  # {reason, ...}: someone changed the target since (UNDO_CONFLICTS)
        "undo_reread_failed",  # {code, message, error_key?, error_params?}: re-read failed
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


class StepError(BaseModel):
    """Why a step failed: the error's code and its message (as raised, English), and when the
    error was keyed, its key and raw params (``GpunodeError.key``/``params``) so each reader
    reads it in their language (rows stored before carry neither: the message is shown)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    code: str
    message: str
    key: str = ""
    params: dict[str, Any] = Field(default_factory=dict)


class StepsReport(BaseModel):
    """What running an action's steps did, step by step (dry run or for real): the changes
    (old -> new per field), each eviction's answer, the step that failed and why, what was
    not run, and the writes that got no answer with what the re-read found."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    changes: tuple[Change, ...] = ()
    evictions: tuple[EvictionOutcome, ...] = ()
    failed_step: Step | None = None
    error: StepError | None = None
    not_run: tuple[Step, ...] = ()
    unanswered: tuple[dict[str, Any], ...] = ()

    @property
    def ok(self) -> bool:
        """Every step ran and no eviction failed (a blocked eviction is an answer)."""
        return self.error is None and not any(e.status == "failed" for e in self.evictions)

    @classmethod
    def from_json(cls, data: Mapping[str, Any] | None) -> StepsReport | None:
        """A stored ``StepsResult.as_json()`` read back (None when nothing was stored)."""
        if not data:
            return None
        return cls.model_validate(
            {
                "changes": data.get("changes") or (),
                "evictions": data.get("evictions") or (),
                "failed_step": data.get("failed_step"),
                "error": data.get("error"),
                "not_run": data.get("not_run") or (),
                "unanswered": data.get("unanswered") or (),
            }
        )


class ActionForm(BaseModel):
    """The confirmation form a tier button opens, for the person who clicked: the plan's
    steps, what restarts, the editable tier-3 values and a reason. ``meta`` travels with
    the form and comes back on submit (incident, plan id, tier, channel)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: Literal["action_form"] = "action_form"
    plan: ActionPlan
    meta: dict[str, Any]


class DryRun(BaseModel):
    """The server dry run of a requested action. ``all_blocked``: every eviction would be
    blocked by a PodDisruptionBudget, so the request is closed; ``awaiting``: Apply was
    pressed and the approval request carries it (no buttons); ``node_ref``: the node as the
    Re-diagnose button names it (``cluster/node`` when several clusters are served)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: Literal["dry_run"] = "dry_run"
    action_id: str
    plan: ActionPlan
    requester: str
    reason: str
    result: StepsReport
    needs_approval: bool
    node_ref: str
    all_blocked: bool = False
    awaiting: bool = False


class ApprovalRequested(BaseModel):
    """What an approver answers: the request, its quorum and roles, the requester's reason
    and, with ``dry_run``, the exact steps (each pod to evict with its owner in ``owners``,
    ``namespace/name`` -> ``Kind/name``), the relief and the dry run's budget blocks."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: Literal["approval_requested"] = "approval_requested"
    plan: ActionPlan
    request: ApprovalRequest
    reason: str
    roles: tuple[str, ...]
    dry_run: StepsReport | None = None
    owners: dict[str, str] = Field(default_factory=dict)


class ApprovalClosed(BaseModel):
    """The approval request once decided (``approved``, ``denied``, ``expired``)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: Literal["approval_closed"] = "approval_closed"
    plan: ActionPlan
    request: ApprovalRequest
    state: Literal["approved", "denied", "expired"]
    by: str
    reason: str


class ActionFailure(BaseModel):
    """Why an action's message says it ended outside its steps, as a code and raw params
    that the presenter words in the reader's language (the timeline entry keeps the same
    data, ``said``):

    - ``interrupted``: a restart stopped it; ``found``: what the reconciler found, one
      ``{"code", "params"}`` per clause (``bot.services.reconciling.observe``);
    - ``crashed``: something failed after the claim, outside the steps; ``code``, ``cause``
      (error, timeout or internal), ``message`` and ``error`` (English, as raised) and, for
      a keyed error, ``error_key`` and ``error_params``;
    - ``no_answer``: a write got no answer (its re-read follows); ``error`` (English),
      ``error_key`` and ``error_params``."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    code: Literal["interrupted", "crashed", "no_answer"]
    params: dict[str, Any] = Field(default_factory=dict)


class ActionResult(BaseModel):
    """An action's message in ``state``: its lifecycle step (``applying``, ``cancelled``...)
    or, once run, what it achieved (``ActionOutcome.outcome``: ``partly``, ``not_applied``...,
    never "applied" for less); ``result``: what each step did; ``undo``: an Undo is
    offered; ``failure``: why it ended outside its steps, and ``why``: a refusal's reason,
    each as a code the presenter words in the reader's language."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: Literal["action_result"] = "action_result"
    action_id: str
    plan: ActionPlan
    state: str
    requester: str
    by: str
    reason: str
    node_ref: str
    failure: ActionFailure | None = Field(None, description="why it ended outside its steps")
    why: Refused | None = Field(None, description="why it was refused, worded by the presenter")
    result: StepsReport | None = None
    undo: bool = False


class ActionDiff(BaseModel):
    """What an action bought, measured by the re-diagnosis after it: the before/after diff
    (verdict, free memory, the ledger lines that moved, findings resolved, new, still open),
    and the tiers the new evidence offers next (``incident_id`` and ``(tier, plan_id)``),
    never a repost of the evidence."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: Literal["action_diff"] = "action_diff"
    diff: DiagnosisDiff
    incident_id: str
    next_tiers: tuple[tuple[int, str], ...] = ()


#: what the action flow tells or posts
ActionTold = ActionForm | DryRun | ApprovalRequested | ApprovalClosed | ActionResult | ActionDiff


class RolloutWatched(BaseModel):
    """Where a controller's rollout (or an in-place resize) stood when watching it ended:
    its progress and verdict after ``waited_s`` seconds."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: Literal["rollout_watched"] = "rollout_watched"
    progress: RolloutProgress
    verdict: Verdict
    waited_s: float


class EvictionsWatched(BaseModel):
    """Which evicted pods were gone (``namespace/name``) and which were still there when
    watching ended, after ``waited_s`` seconds."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: Literal["evictions_watched"] = "evictions_watched"
    gone: list[str]
    left: list[str]
    waited_s: float


class AuditAnchored(BaseModel):
    """The audit chain's head as anchored at a resolve (``bot.services.anchoring``): posted
    in full, as it is what a later ``gpunode audit --verify --anchors`` compares."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: Literal["audit_anchored"] = "audit_anchored"
    row_id: int
    row_hash: str


#: what a use case tells a person or posts in a thread
#: what a use case tells a person or posts in a thread
Told = (
    Refused
    | Notice
    | RootLine
    | Diagnosed
    | ActionTold
    | RolloutWatched
    | EvictionsWatched
    | AuditAnchored
)


def refused(code: str, /, **params: Any) -> Refused:
    return Refused(code=code, params=params)


def notice(key: str, /, **params: Any) -> Notice:
    return Notice(key=key, params=params)


# -- what a command answers (``bot.services.commands.handle``); each surface presents it --


class IncidentLine(BaseModel):
    """One open incident as ``status`` lists it."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str
    at: NodeRef
    state: str
    opened_at: AwareDatetime


class StatusList(BaseModel):
    """``status``: the open incidents (of ``asked``, a node filter as typed: ``[CLUSTER/]NODE``,
    or of every node when None); ``show_cluster`` when several clusters are served."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: Literal["status_list"] = "status_list"
    incidents: tuple[IncidentLine, ...]
    asked: str | None = None
    show_cluster: bool = False


class RankedNode(BaseModel):
    """One row of ``top``: a GPU node and its memory pressure (percentages of allocatable)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    at: NodeRef
    memory_pressure: bool
    working_set_percent: int | None
    limits_percent: int | None
    requests_percent: int | None


class ClusterLeftOut(BaseModel):
    """A cluster ``top`` could not ask: its name and gpunode's error (code and English text;
    ``key`` and raw ``params``, when it has them, for the reader's words)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    cluster: str
    code: str
    message: str
    key: str = ""
    params: dict[str, Any] = Field(default_factory=dict)


class TopNodes(BaseModel):
    """``top``: GPU nodes ranked by memory pressure, and the clusters left out. ``asked``:
    how many clusters were asked (every one left out: nothing answered)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: Literal["top_nodes"] = "top_nodes"
    rows: tuple[RankedNode, ...]
    failures: tuple[ClusterLeftOut, ...] = ()
    asked: int = 1
    show_cluster: bool = False

    @property
    def nothing_answered(self) -> bool:
        return bool(self.failures) and len(self.failures) >= self.asked


class Resolved(BaseModel):
    """``resolve``: the incident is resolved (``in_thread``: the news is in its thread)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: Literal["resolved"] = "resolved"
    incident_id: str
    by: str
    note: str = ""
    in_thread: bool = False


class HelpAsked(BaseModel):
    """``help``: all commands, or one (``topic``); the presenter words it for its surface."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: Literal["help"] = "help"
    topic: str | None = None


class Exported(BaseModel):
    """``timeline`` in a terminal: the incident's postmortem draft, as Markdown."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: Literal["exported"] = "exported"
    incident_id: str
    markdown: str


class Posted(BaseModel):
    """The use case answered where it works (the incident thread: a diagnosis, a kit, a
    postmortem upload); nothing is left to present. ``ok`` False: it failed, and said so
    there."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: Literal["posted"] = "posted"
    verb: str
    ok: bool = True


class NodeDiagnosed(BaseModel):
    """``diagnose`` in a terminal: the node's diagnosis, with no incident or thread (the
    terminal prints it in the format asked for)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: Literal["node_diagnosed"] = "node_diagnosed"
    at: NodeRef
    diagnosis: Diagnosis
    bundle: EvidenceBundle | None = None


class KitMade(BaseModel):
    """``prevent`` in a terminal: the node's prevention kit as data, read from the cluster
    just now (the terminal prints its files, or writes them where asked)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: Literal["kit_made"] = "kit_made"
    at: NodeRef
    params: PreventionParams
    source: KitSource


#: what ``handle`` answers for a command
Outcome = (
    Refused
    | StatusList
    | TopNodes
    | Resolved
    | HelpAsked
    | Exported
    | Posted
    | NodeDiagnosed
    | KitMade
)


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
