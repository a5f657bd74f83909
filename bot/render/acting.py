"""Block Kit for the action flow's outcomes (``bot.core.reporting.outcomes``): the confirmation
modal (``ActionForm``), the dry run (``DryRun``), the approval request and its decision
(``ApprovalRequested``, ``ApprovalClosed``), the action's message (``ActionResult``, which
replaces the buttons) and the compact before/after (``ActionDiff``). The Slack presenter
calls ``render_action``/``action_form`` in the reader's language; its short notices are
worded by ``bot.render.notices``.

Structure here; one layout for the words in ``templates/slack/acting.j2``, translated in
the catalogs (context ``acting``). Button values carry only ids (action, approval);
everything else is re-read from the store at click time.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from bot.core.diagnosis.findings import Diagnosis
from bot.core.governance.approvals import ApprovalRequest
from bot.core.model.actions import ActionPlan
from bot.core.model.changes import EvictionOutcome
from bot.core.remedies.field_changes import field_changes
from bot.core.reporting.diffing import DiagnosisDiff
from bot.core.reporting.outcomes import (
    ActionDiff,
    ActionFailure,
    ActionForm,
    ActionResult,
    ActionTold,
    ApprovalClosed,
    ApprovalRequested,
    DryRun,
    Refused,
)
from bot.render import environment
from bot.render.blocks import (
    ACTION_IDS,
    BUTTON_STYLES,
    Block,
    Message,
    button_value,
    context,
    fit,
    header,
    section,
)
from bot.render.errors import error_text, refusal_mrkdwn
from bot.render.filters import truncate
from bot.render.timeline import entry_text, found_text
from bot.render.watching import modal_notes, outcome_extras

CONFIRM_CALLBACK = "gpunode_confirm"
APPLY, CANCEL, UNDO = "gpunode_apply", "gpunode_cancel", "gpunode_undo"
APPROVE, DENY, REDIAGNOSE = "gpunode_approve", "gpunode_deny", "gpunode_rediagnose"
MODAL_TEXT = 3000  # section text limit inside views as in messages


def _t(locale: str) -> Any:
    return environment.macros("slack", "acting.j2", locale=locale)


def _s(value: Any) -> str:
    return str(value).strip()


def _plain(text: str, limit: int = 75) -> dict[str, Any]:
    return {"type": "plain_text", "text": truncate(text, limit)}


def _button(action_id: str, text: str, value: str, style: str | None = None) -> Block:
    b: Block = {"type": "button", "action_id": action_id, "text": _plain(text), "value": value}
    if style:
        b["style"] = style
    return b


def _input(block_id: str, label: str, element: Block, *, optional: bool = False) -> Block:
    return {
        "type": "input",
        "block_id": block_id,
        "label": _plain(label, 2000),
        "optional": optional,
        "element": element,
    }


def _text_input(initial: str | None, *, multiline: bool = False) -> Block:
    el: Block = {"type": "plain_text_input", "action_id": "value", "multiline": multiline}
    if initial:
        el["initial_value"] = initial
    return el


def confirmation_modal(
    plan: ActionPlan,
    *,
    meta: dict[str, Any],
    locale: str,
    diagnosis: Diagnosis | None = None,
) -> dict[str, Any]:
    """``diagnosis`` is not read (the plan carries what the form shows); kept for callers."""
    t = _t(locale)
    blocks: list[Block] = [section(_s(t.modal_intro(plan)))]
    if plan.tier == 1:
        blocks.append(section(_s(t.modal_evictions(plan))))
        blocks += _budget_blocks(plan, t)
        if any(p.refusal is None for p in plan.protected):
            blocks.append(section(_s(t.modal_protected(plan))))
    else:
        blocks.append(section(_s(t.modal_steps(plan))))
    if plan.restarts:
        blocks.append(section(_s(t.modal_restarts(plan))))
    blocks += modal_notes(plan, locale=locale)
    if plan.values is not None:
        v = plan.values
        blocks.append(section(_s(t.modal_values(plan))))
        blocks.append(
            _input("memory_limit", _s(t.label("memory_limit")), _text_input(v.memory_limit))
        )
        blocks.append(
            _input("memory_request", _s(t.label("memory_request")), _text_input(v.memory_request))
        )
        blocks.append(
            _input("cpu_limit", _s(t.label("cpu_limit")), _text_input(v.cpu_limit), optional=True)
        )
        blocks.append(
            _input(
                "cpu_request", _s(t.label("cpu_request")), _text_input(v.cpu_request), optional=True
            )
        )
        omp: Block = {
            "type": "number_input",
            "action_id": "value",
            "is_decimal_allowed": False,
            "min_value": "1",
            "max_value": "1024",
        }
        if v.omp_num_threads is not None:
            omp["initial_value"] = str(v.omp_num_threads)
        blocks.append(_input("omp_num_threads", _s(t.label("omp_num_threads")), omp, optional=True))
        option = {"text": _plain(_s(t.label("accept_oom_option")), 75), "value": "yes"}
        blocks.append(
            _input(
                "accept_oom",
                _s(t.label("accept_oom")),
                {"type": "checkboxes", "action_id": "value", "options": [option]},
                optional=True,
            )
        )
    blocks.append(_input("reason", _s(t.label("reason")), _text_input(None, multiline=True)))
    return {
        "type": "modal",
        "callback_id": CONFIRM_CALLBACK,
        "private_metadata": json.dumps(meta, separators=(",", ":")),
        "title": _plain(_s(t.modal_title(plan.tier)), 24),
        "submit": _plain(_s(t.modal_submit(plan.tier)), 24),
        "close": _plain(_s(t.cancel_button()), 24),
        "blocks": blocks[:100],
    }


def _budget_blocks(plan: ActionPlan, t: Any) -> list[Block]:
    """The plan's pods that a PodDisruptionBudget pins (the eviction API would refuse them
    now), each with its budget and counts: said in the confirmation, the dry run and the
    approval request, before anyone approves."""
    pinned = [p for p in plan.protected if p.refusal is not None]
    return [section(_s(t.budget_blocks(pinned)))] if pinned else []


def _step_error(error: Any, locale: str) -> str:
    """A failed step's error in ``locale`` (a ``GpunodeError`` or a stored ``StepError``):
    worded from its key and params when it has them, else its English message."""
    key = str(getattr(error, "key", "") or "")
    params = getattr(error, "params", None)
    if not key or not isinstance(params, Mapping):
        return str(error.message)
    return error_text(key, params, str(error.message), locale)


def _result_lines(result: Any, t: Any, locale: str) -> list[str]:
    if result is None:
        return []
    # old -> new per field, as people write quantities (never the patch body that was sent)
    lines = [_s(t.change_line(c, field_changes(c.before, c.after))) for c in result.changes]
    lines += [_s(t.eviction_line(_eviction_worded(e, locale))) for e in result.evictions]
    if result.error is not None:
        message = _step_error(result.error, locale)
        lines.append(_s(t.error_line(result.error.code, message, result.failed_step)))
    if result.not_run:
        lines.append(_s(t.not_run_line(result.not_run)))
    # writes that got no answer, and what the re-read found (bot/services/settling.py)
    unanswered = getattr(result, "unanswered", None) or []
    lines += [_s(t.unanswered_line(_reread_worded(u, locale))) for u in unanswered]
    return lines


def _eviction_worded(e: EvictionOutcome, locale: str) -> EvictionOutcome:
    """A pod's eviction with its reason worded in ``locale`` when it is keyed."""
    if not e.reason_key:
        return e
    words = error_text(e.reason_key, e.reason_params, e.reason, locale)
    return e.model_copy(update={"reason": words})


def _reread_worded(u: Mapping[str, Any], locale: str) -> Mapping[str, Any]:
    """An unanswered write (``Settled.as_json``) whose re-read failed too, that failure worded
    in ``locale`` when it was keyed (``reread_key``/``reread_params``)."""
    key, params = u.get("reread_key"), u.get("reread_params")
    if not key or not isinstance(params, Mapping):
        return u
    return {**u, "reread_error": error_text(str(key), params, str(u.get("reread_error")), locale)}


def _lines_blocks(lines: list[str]) -> list[Block]:
    blocks: list[Block] = []
    chunk: list[str] = []
    size = 0
    for line in lines:
        if size + len(line) + 1 > MODAL_TEXT - 100 and chunk:
            blocks.append(section("\n".join(chunk)))
            chunk, size = [], 0
        chunk.append(line)
        size += len(line) + 1
    if chunk:
        blocks.append(section("\n".join(chunk)))
    return blocks


def dry_run_message(
    plan: ActionPlan,
    *,
    action_id: str,
    requester: str,
    reason: str,
    result: Any,
    needs_approval: bool,
    locale: str,
    node_ref: str | None = None,
    all_blocked: bool = False,
    awaiting: bool = False,
) -> Message:
    """``node_ref``: what the Re-diagnose button names (``cluster/node``; default the node).
    ``all_blocked``: every eviction would be blocked by a PodDisruptionBudget, so the plan
    is closed like a failed dry run (said, and no Apply). ``awaiting``: Apply was pressed and
    an approval request is posted: the same dry run stays, with no buttons and a line."""
    t = _t(locale)
    ok = result.ok and not all_blocked
    blocks: list[Block] = [
        header(_s(t.dry_run_header(plan))),
        section(_s(t.dry_run_summary(plan, requester, reason, ok, needs_approval))),
    ]
    if all_blocked:
        blocks.append(section(_s(t.all_blocked_line(len(result.evictions)))))
    blocks += _lines_blocks(_result_lines(result, t, locale))
    blocks += _budget_blocks(plan, t)
    text = truncate(_s(t.dry_run_header(plan)), 3000)
    if awaiting:
        return text, fit(blocks, "…", tail=[context(_s(t.awaiting_line()))])
    if not ok:
        # applying would fail the same way: the request is closed, offer a fresh diagnosis
        retry = _button(REDIAGNOSE, _s(t.rediagnose_button()), node_ref or plan.node, "primary")
        tail = [{"type": "actions", "block_id": f"act:{action_id}", "elements": [retry]}]
        return text, fit(blocks, "…", tail=tail)
    apply = _button(APPLY, _s(t.apply_button()), action_id, "danger")
    apply["confirm"] = {
        "title": _plain(_s(t.apply_confirm_title()), 100),
        "text": _plain(_s(t.apply_confirm_text(plan)), 300),
        "confirm": _plain(_s(t.apply_button())),
        "deny": _plain(_s(t.cancel_button())),
        "style": "danger",
    }
    actions = {
        "type": "actions",
        "block_id": f"act:{action_id}",
        "elements": [apply, _button(CANCEL, _s(t.cancel_button()), action_id)],
    }
    return text, fit(blocks, "…", tail=[actions])


def approval_message(
    plan: ActionPlan,
    req: ApprovalRequest,
    *,
    reason: str,
    roles: tuple[str, ...],
    locale: str,
    dry_run: Any = None,
    owners: dict[str, str] | None = None,
) -> Message:
    """The request an approver answers. With ``dry_run`` (the requester's ``StepsResult``)
    it carries what is approved: the exact steps (each pod to evict with its ``owners``
    entry, ``namespace/name`` -> ``Kind/name``), the relief, and the server dry run with
    every PodDisruptionBudget block named, before anyone approves."""
    t = _t(locale)
    body = _s(t.approval_text(plan, req, reason, list(roles)))
    blocks: list[Block] = [section(body)]
    if dry_run is not None:
        blocks.append(section(_s(t.approval_steps(plan, owners or {}))))
        if plan.shortage_bytes > 0:
            blocks.append(section(_s(t.approval_relief(plan))))
    blocks += _budget_blocks(plan, t)
    if dry_run is not None:
        blocked = [e for e in dry_run.evictions if e.status == "blocked"]
        blocks.append(section(_s(t.approval_dry_run(dry_run.ok, len(blocked)))))
        if blocked:
            blocks.append(context(_s(t.blocked_summary(blocked))))
        blocks += _lines_blocks(_result_lines(dry_run, t, locale))
    buttons: Block = {
        "type": "actions",
        "block_id": f"approval:{req.id}",
        "elements": [
            _button(APPROVE, _s(t.approve_button()), req.id, "primary"),
            _button(DENY, _s(t.deny_button()), req.id, "danger"),
        ],
    }
    return truncate(body, 3000), fit(blocks, "…", tail=[buttons])


def approval_closed(
    plan: ActionPlan,
    req: ApprovalRequest,
    *,
    state: str,
    by: str,
    reason: str,
    locale: str,
) -> Message:
    """The approval request once decided (``approved``, ``denied``, ``expired``): the same
    request with its outcome and no buttons, so nobody clicks a dead Approve."""
    t = _t(locale)
    body = _s(t.approval_closed_text(plan, req, state, by, reason))
    return truncate(body, 3000), [section(body)]


def outcome_message(
    plan: ActionPlan,
    *,
    action_id: str,
    state: str,
    requester: str,
    by: str,
    reason: str,
    result: Any,
    undo: bool,
    locale: str,
    node_ref: str | None = None,
    failure: ActionFailure | None = None,
    why: Refused | None = None,
) -> Message:
    """``failure``: why it ended outside its steps, and ``why``: a refusal's reason, each a
    code worded here in ``locale`` (the refusal, when there is one)."""
    t = _t(locale)
    shown = "" if why is not None or failure is None else failure_text(failure, locale)
    summary = _s(t.outcome_summary(plan, state, requester, by, reason, shown))
    if why is not None:
        summary += "\n" + refusal_mrkdwn(why.code, why.params, locale)
    blocks: list[Block] = [section(summary)]
    if result is not None:
        blocked = [e for e in result.evictions if e.status == "blocked"]
        if blocked:
            blocks.append(context(_s(t.blocked_summary(blocked))))
        blocks += _lines_blocks(_result_lines(result, t, locale))
    blocks += outcome_extras(plan, state=state, undo=undo, locale=locale)
    elements: list[Block] = []
    if undo:
        elements.append(_button(UNDO, _s(t.undo_button()), action_id))
    if state == "stale":
        elements.append(
            _button(REDIAGNOSE, _s(t.rediagnose_button()), node_ref or plan.node, "primary")
        )
    tail = (
        [{"type": "actions", "block_id": f"done:{action_id}", "elements": elements}]
        if elements
        else []
    )
    return truncate(summary, 3000), fit(blocks, "…", tail=tail)


def failure_text(failure: ActionFailure, locale: str) -> str:
    """Why an action ended outside its steps, plain text in ``locale``: the words the
    timeline gives a crash (the error it quotes worded from its key), what the reconciler
    found of an interrupted action, or the error of a write that got no answer."""
    p = failure.params
    if failure.code == "interrupted":
        return _s(_t(locale).interrupted(found_text(p.get("found"), locale=locale)))
    if failure.code == "crashed":
        return entry_text({"code": "crashed", "params": p}, "", locale=locale)
    quoted = p.get("error_params")
    return error_text(
        str(p.get("error_key") or ""),
        dict(quoted) if isinstance(quoted, Mapping) else {},
        str(p.get("error") or ""),
        locale,
    )


def diff_message(
    diff: DiagnosisDiff,
    locale: str,
    *,
    incident_id: str | None = None,
    next_tiers: tuple[tuple[int, str], ...] | None = None,
) -> Message:
    """What an action bought, compact: the verdict and free memory before -> after, the
    lines that moved most, the findings resolved / new / still open (counted, the first
    few named) and, with ``next_tiers`` (``(tier, plan_id)`` of the new evidence), what is
    offered next, with its buttons: never a repost of the evidence."""
    t = _t(locale)
    lines = [_s(t.diff_summary(diff)), _s(t.diff_ledger(diff))]
    findings = _s(t.diff_findings(diff))
    if findings:
        lines.append(findings)
    if next_tiers is not None:
        lines.append(_s(t.diff_next([tier for tier, _ in next_tiers])))
    blocks: list[Block] = [header(_s(t.diff_header(diff))), section("\n".join(lines))]
    buttons = [
        _button(
            ACTION_IDS[tier],
            _s(t.next_button(tier)),
            button_value(incident_id, plan_id),
            BUTTON_STYLES[tier],
        )
        for tier, plan_id in next_tiers or ()
        if tier in ACTION_IDS
    ]
    if buttons:
        blocks.append({"type": "actions", "block_id": "gpunode_tiers", "elements": buttons})
    return truncate(_s(t.diff_summary(diff)), 3000), blocks


def action_form(told: ActionForm, locale: str) -> dict[str, Any]:
    """The confirmation modal of ``told``, in the clicking person's ``locale``."""
    return confirmation_modal(told.plan, meta=told.meta, locale=locale)


def render_action(told: ActionTold, locale: str) -> Message:
    """The message of an action-flow outcome in ``locale`` (a form is a view: ``action_form``)."""
    if isinstance(told, DryRun):
        return dry_run_message(
            told.plan,
            action_id=told.action_id,
            requester=told.requester,
            reason=told.reason,
            result=told.result,
            needs_approval=told.needs_approval,
            node_ref=told.node_ref,
            all_blocked=told.all_blocked,
            awaiting=told.awaiting,
            locale=locale,
        )
    if isinstance(told, ApprovalRequested):
        return approval_message(
            told.plan,
            told.request,
            reason=told.reason,
            roles=told.roles,
            dry_run=told.dry_run,
            owners=told.owners,
            locale=locale,
        )
    if isinstance(told, ApprovalClosed):
        return approval_closed(
            told.plan, told.request, state=told.state, by=told.by, reason=told.reason, locale=locale
        )
    if isinstance(told, ActionResult):
        return outcome_message(
            told.plan,
            action_id=told.action_id,
            state=told.state,
            requester=told.requester,
            by=told.by,
            reason=told.reason,
            failure=told.failure,
            why=told.why,
            result=told.result,
            undo=told.undo,
            node_ref=told.node_ref,
            locale=locale,
        )
    if isinstance(told, ActionDiff):
        return diff_message(
            told.diff, locale, incident_id=told.incident_id, next_tiers=told.next_tiers
        )
    raise TypeError(f"a {told.kind} is a form, opened as a view")
