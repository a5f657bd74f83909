"""Every kind of message gpunode writes about one diagnosis, rendered in one locale, with the
same parameters whatever the locale: the three thread messages, the reports, every sentence
(strict: no fallback), the action flow (modal, dry run, approval, outcomes, diff), the
timeline export, the postmortem (Markdown and HTML, with its first symptom and a story of
every timeline code), the chart's marker labels, each timeline entry's clause, the
prevention kit, and the terminal's ``gpunode doctor`` table and ``gpunode migrate`` lines.
Each Slack message is checked against the Slack stand-in's Block Kit validator as it is rendered.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from bot.cli import audit
from bot.core.diagnosis.findings import Diagnosis
from bot.core.diagnosis.history import Marker
from bot.core.governance.approvals import new_request
from bot.core.model.actions import ActionPlan, Step
from bot.core.model.changes import Change, EvictionOutcome
from bot.core.model.cluster import ClusterView
from bot.core.model.evidence import EvidenceBundle
from bot.core.model.incidents import TimelineEntry, said
from bot.core.remedies.prevention import prevention_params
from bot.core.remedies.watching import PodProgress, RolloutProgress
from bot.core.reporting.charts import action_markers
from bot.core.reporting.diffing import diff_diagnoses
from bot.core.reporting.outcomes import ActionFailure, Refused
from bot.core.reporting.postmortem import ActionSummary, Postmortem, Snapshot, TimelineRow
from bot.core.reporting.postmortem_story import detection_of, story, went_well_and_badly
from bot.errors import ClusterUnreachableError, ForbiddenError
from bot.render import acting, checkup, watching
from bot.render.blocks import details_view, diagnosis_messages
from bot.render.catalogs import translator
from bot.render.cli_text import line
from bot.render.markdown import render_report_markdown
from bot.render.markers import marker_label
from bot.render.messages import render_root, verdict_headline
from bot.render.postmortem import render_postmortem_html, render_postmortem_markdown
from bot.render.prevention import kit_message, render_kit_markdown, render_prevention_files
from bot.render.sentences import Fmt, sentence
from bot.render.text import render_report_text
from bot.render.timeline import entry_text
from bot.services.executing import StepsResult, timed_out
from bot.slack.blockkit import validate_blocks
from gpunode_sandbox.slacksim.validation import blocks_errors, view_errors
from tests.render.audit_samples import AUDIT_SAMPLES
from tests.render.checkup_samples import CHECKUP_SAMPLES, QUOTED_REASONS
from tests.render.told import REASON_SAMPLES, REFUSAL_SAMPLES, render_notice, render_refusal

T0 = datetime(2026, 12, 1, 2, 0, tzinfo=UTC)
FORMATS: tuple[Fmt, ...] = ("mrkdwn", "markdown", "text")
OUTCOME_STATES = (
    "applying",
    "succeeded",
    "failed",
    "stale",
    "cancelled",
    "denied",
    "expired",
    "awaiting_approval",
    "undone",
    "undo_failed",
)

Message = tuple[str, list[dict[str, Any]]]


def failure_samples(plan: ActionPlan) -> dict[str, ActionFailure]:
    """Every way an action's message says it ended outside its steps, with the params the
    services give each (``applying._crashed``, ``reconciling``, an unanswered write)."""
    unreachable = ClusterUnreachableError("prod-eu", waited_s=10)
    step = plan.steps[0] if plan.steps else Step(verb="cordon", kind="Node", name=plan.node)
    unanswered = timed_out(step, write=True)
    crashed = {"code": unreachable.code, "message": f"{unreachable.message}. Nothing was changed."}
    return {
        "interrupted": ActionFailure(
            code="interrupted",
            params={
                "found": [
                    {"code": "cordoned", "params": {"node": "gpu-node-01"}},
                    {"code": "evictions", "params": {"done": 1, "planned": 2}},
                    {"code": "check_spec", "params": {"target": "Deployment/ml/train"}},
                ]
            },
        ),
        "interrupted_unreadable": ActionFailure(
            code="interrupted",
            params={"found": [{"code": "unreadable", "params": {"node": "n", "error": "timeout"}}]},
        ),
        "crashed_error": ActionFailure(
            code="crashed",
            params=crashed
            | {
                "cause": "error",
                "error": unreachable.message,
                "error_key": unreachable.key,
                "error_params": dict(unreachable.params),
            },
        ),
        "crashed_timeout": ActionFailure(
            code="crashed",
            params={"code": "timeout", "message": "the API server ...", "cause": "timeout"},
        ),
        "no_answer": ActionFailure(
            code="no_answer",
            params={
                "error": unanswered.message,
                "error_key": unanswered.key,
                "error_params": dict(unanswered.params),
            },
        ),
    }


def checked(name: str, message: Message, out: dict[str, object]) -> None:
    """Record a Slack message after checking it as Slack would."""
    text, blocks = message
    assert text, f"{name}: empty notification text"
    validate_blocks(blocks)
    assert blocks_errors(blocks) == [], f"{name}: {blocks_errors(blocks)}"
    out[name] = message


def strict_sentences(d: Diagnosis, locale: str) -> list[str]:
    """Every sentence of the diagnosis in every format; raises if one falls back."""
    out = []
    v = d.verdict
    for fmt in FORMATS:
        out.append(
            sentence(
                "verdicts",
                v.cause,
                v.params,
                fmt=fmt,
                subject=v.subject,
                locale=locale,
                strict=True,
            )
        )
        for f in d.findings:
            out.append(
                sentence(
                    "findings",
                    f.code,
                    f.params,
                    fmt=fmt,
                    subject=f.subject,
                    severity=f.severity,
                    locale=locale,
                    strict=True,
                )
            )
        for tp in d.talking_points:
            out.append(
                sentence("talking_points", tp.key, tp.params, fmt=fmt, locale=locale, strict=True)
            )
        for plan in d.plans:
            for w in plan.warnings:
                out.append(sentence("warnings", w, {}, fmt=fmt, locale=locale, strict=True))
            for n in plan.notes:
                out.append(sentence("notes", n.code, n.params, fmt=fmt, locale=locale, strict=True))
    return out


def _result(plan: ActionPlan, *, ok: bool) -> StepsResult:
    step = plan.steps[0] if plan.steps else Step(verb="cordon", kind="Node", name=plan.node)
    result = StepsResult(
        changes=[
            Change(
                verb="cordon",
                kind="Node",
                name=plan.node,
                dry_run=True,
                patch={"spec": {"unschedulable": True}},
            ),
            Change(
                verb="patch_resources",
                kind="Deployment",
                namespace="ml",
                name="x",
                dry_run=False,
                patch={"spec": {"replicas": 1}},
            ),
        ],
        evictions=[
            EvictionOutcome(namespace="ml", name=b, status=s, reason="budget")
            for b, s in zip(
                plan.blast_radius or ["pod-a"], ("dry_run", "blocked", "evicted"), strict=False
            )
        ],
    )
    if not ok:
        result.error = ForbiddenError("evictions are forbidden here")
        result.failed_step = step
    return result


def action_flow(d: Diagnosis, locale: str, out: dict[str, object]) -> None:
    for plan in d.plans:
        tag = f"tier{plan.tier}"
        view = acting.confirmation_modal(plan, diagnosis=d, meta={"incident": "I"}, locale=locale)
        assert view_errors(view) == [], f"{tag} modal: {view_errors(view)}"
        out[f"{tag}.modal"] = view
        for ok in (True, False):
            checked(
                f"{tag}.dry_run.{ok}",
                acting.dry_run_message(
                    plan,
                    action_id="A1",
                    requester="U1",
                    reason="why",
                    result=_result(plan, ok=ok),
                    needs_approval=True,
                    locale=locale,
                ),
                out,
            )
        req = new_request("R1", "A1", tier=plan.tier, requester="U1", quorum=2, at=T0, ttl_s=600)
        checked(
            f"{tag}.approval",
            acting.approval_message(plan, req, reason="why", roles=("sre",), locale=locale),
            out,
        )
        for state in ("approved", "denied", "expired"):
            checked(
                f"{tag}.approval.{state}",
                acting.approval_closed(
                    plan, req, state=state, by="U2", reason="why", locale=locale
                ),
                out,
            )
        for state in OUTCOME_STATES:
            checked(
                f"{tag}.outcome.{state}",
                acting.outcome_message(
                    plan,
                    action_id="A1",
                    state=state,
                    requester="U1",
                    by="U2",
                    reason="why",
                    result=_result(plan, ok=state != "failed"),
                    undo=state == "succeeded",
                    locale=locale,
                ),
                out,
            )
        checked(
            f"{tag}.outcome.stale.why",
            acting.outcome_message(
                plan,
                action_id="A1",
                state="stale",
                requester="U1",
                by="U2",
                reason="why",
                result=None,
                undo=False,
                locale=locale,
                why=Refused(
                    code="plan_stale",
                    params={"reason": "evidence_old", "age_min": 16, "limit_min": 15},
                ),
            ),
            out,
        )
        for name, failure in failure_samples(plan).items():
            checked(
                f"{tag}.outcome.{name}",
                acting.outcome_message(
                    plan,
                    action_id="A1",
                    state="unknown" if failure.code == "no_answer" else "failed",
                    requester="U1",
                    by="U2",
                    reason="why",
                    result=None,
                    undo=False,
                    locale=locale,
                    failure=failure,
                ),
                out,
            )
    for key, params in (
        ("approval_pending", {}),
        ("vote_counted", {"remaining": 1}),
        ("interrupted", {"action_id": "A1", "tier": 1, "observed": "x"}),
    ):
        checked(f"notice.{key}", render_notice(key, locale, **params), out)
    found = [
        {"code": "cordoned", "params": {"node": "gpu-node-01"}},
        {"code": "evictions", "params": {"done": 1, "planned": 2}},
    ]
    checked(
        "notice.interrupted.found",
        render_notice(
            "interrupted", locale, action_id="A1", tier=1, observed="node ...", found=found
        ),
        out,
    )
    for code, params in REFUSAL_SAMPLES.items():
        checked(f"refusal.{code}", render_refusal(code, locale, **params), out)
    for code, reasons in REASON_SAMPLES.items():
        for reason, params in reasons.items():
            told = render_refusal(code, locale, reason=reason, **params)
            checked(f"refusal.{code}.{reason}", told, out)

    checked("diff", acting.diff_message(diff_diagnoses(d, d), locale=locale), out)
    for tiers in ((), ((1, "p1"),), ((1, "p1"), (3, "p3"))):
        diff = acting.diff_message(
            diff_diagnoses(d, d), locale, incident_id="INC-1", next_tiers=tiers
        )
        checked(f"diff.next{len(tiers)}", diff, out)


def watching_messages(locale: str, out: dict[str, object]) -> None:
    progress = RolloutProgress(
        kind="Deployment",
        namespace="ml",
        name="x",
        desired=2,
        pods=[
            PodProgress(key="ml/x-1", phase="Pending", current=True, reason="Unschedulable"),
            PodProgress(key="ml/x-2", phase="Running", ready=True, current=True),
        ],
        problems=["0/3 nodes are available"],
    )
    for verdict in ("applied", "rolling", "stalled", "on_delete"):
        checked(
            f"rollout.{verdict}",
            watching.rollout_message(progress, verdict, waited_s=60, locale=locale),  # type: ignore[arg-type]
            out,
        )
    checked(
        "evictions.done", watching.evictions_message(["ml/a"], [], waited_s=5, locale=locale), out
    )
    checked(
        "evictions.left",
        watching.evictions_message(["ml/a"], ["ml/b"], waited_s=5, locale=locale),
        out,
    )


def documents(
    d: Diagnosis,
    bundle: EvidenceBundle | None,
    view: ClusterView | None,
    locale: str,
    out: dict[str, object],
) -> None:
    out["report.md"] = render_report_markdown(d, bundle, incident="INC-0001", locale=locale)
    out["report.txt"] = render_report_text(d, bundle, incident="INC-0001", locale=locale)
    snap = Snapshot(at=T0, diagnosis=d, bundle=bundle)
    plan = d.plans[0] if d.plans else None
    detected = detection_of(
        MARKERS, opened_at=T0 + timedelta(minutes=30), opened_by="alice", raw_opener="U1"
    )
    pm = Postmortem(
        incident_id="INC-0001",
        node=d.node,
        cluster="prod",
        state="resolved",
        opened_at=T0,
        ended_at=T0 + timedelta(minutes=42),
        resolved=True,
        opened_by="alice",
        start=snap,
        end=snap,
        evicted=["ml/a"],
        restarted=["ml/b"],
        oom_kills=["ml/c 02:10"],
        actions=[
            ActionSummary(
                action_id="A1",
                tier=plan.tier if plan else 1,
                target="Node/x",
                state="succeeded",
                requested_by="alice",
                requested_at=T0,
                reason="why",
                effect=diff_diagnoses(d, d),
            )
        ],
        participants=["alice"],
        prevention=prevention_params(view) if view is not None else None,
        timeline=[TimelineRow(at=T0, kind="note", actor="alice", text="x")],
        detection=detected,
        # the first symptom, late: "went badly" quotes it too
        went_badly=went_well_and_badly(
            detection=detected, actions=[], end_cause=None, healthy_causes=frozenset()
        )[1],
        story=story(MARKERS, timeline_entries(), names={"U1": "alice"}, outcomes={}),
    )
    out["postmortem.md"] = render_postmortem_markdown(pm, charts={"start": "s.png"}, locale=locale)
    out["postmortem.html"] = render_postmortem_html(pm, charts={"start": b"png"}, locale=locale)
    if view is not None:
        params = prevention_params(view)
        files = render_prevention_files(params, locale=locale)
        out["prevention"] = files
        out["prevention_kit.md"] = render_kit_markdown(files, locale=locale)
        checked("kit.message", kit_message(params, None, locale=locale), out)


#: one marker of each kind and source the core writes (``markers_from``, ``bot.prom.history``)
MARKERS = [
    Marker(
        at=T0 - timedelta(minutes=20),
        kind="oom_kill",
        subject="ml/train-0",
        label="cgroup OOM kill python",
        source="kmsg:/dev/kmsg",
        params={"scope": "cgroup", "process": "python"},
    ),
    Marker(
        at=T0 - timedelta(minutes=19),
        kind="oom_kill",
        subject="node",
        label="global OOM kill python",
        source="kmsg:/dev/kmsg",
        params={"scope": "global", "process": "python"},
    ),
    Marker(
        at=T0 - timedelta(minutes=18),
        kind="oom_kill",
        subject="node",
        label="OOM kill (node_vmstat_oom_kill)",
        source="prometheus:node_vmstat_oom_kill",
        params={"counter": "node_vmstat_oom_kill"},
    ),
    Marker(
        at=T0 - timedelta(minutes=17),
        kind="eviction",
        subject="ml/a",
        label="evicted",
        source="k8s:events",
        params={"reason": "Evicted"},
    ),
    Marker(
        at=T0 - timedelta(minutes=16),
        kind="restart",
        subject="ml/b/main",
        label="restart (OOMKilled)",
        source="prometheus:kube_pod_container_status_restarts_total",
        params={"reason": "OOMKilled"},
    ),
    Marker(
        at=T0 - timedelta(minutes=15),
        kind="restart",
        subject="ml/b/main",
        label="restart",
        source="prometheus:kube_pod_container_status_restarts_total",
    ),
    Marker(
        at=T0 - timedelta(minutes=14),
        kind="xid",
        subject="GPU 3",
        label="XID 79",
        source="kmsg:/dev/kmsg",
        params={"code": 79},
    ),
]


def timeline_entries() -> list[TimelineEntry]:
    """One timeline entry per code the services write (``TimelineEntry.said``), its English
    ``text`` as they store it."""
    unanswered = {
        "step": {"verb": "cordon", "name": "gpu-node-01"},
        "waited_s": 10,
        "landed": True,
        "fields": ["unschedulable"],
    }
    said_by_code: list[tuple[str, str, dict[str, Any]]] = [
        (
            "action_result",
            "refused as stale: the evidence is 12 min old",
            said("refused_stale", reason="evidence_old", age_min=12, limit_min=10),
        ),
        (
            "action_result",
            "refused as stale: pod gone",
            said("refused_stale", reason="pod_gone", pod="ml/a", node="gpu-node-01"),
        ),
        (
            "action_result",
            "tier 1 succeeded",
            said(
                "action_result",
                tier=1,
                state="succeeded",
                outcome="applied",
                overstated=False,
                evicted=0,
                to_evict=0,
                partial=False,
                unanswered=[unanswered],
            ),
        ),
        (
            "action_result",
            "tier 1 not applied",
            said(
                "action_result",
                tier=1,
                state="succeeded",
                outcome="not_applied",
                overstated=True,
                evicted=0,
                to_evict=2,
                partial=True,
                unanswered=[{**unanswered, "landed": None}],
            ),
        ),
        ("action_result", "tier 3 undone", said("undone", tier=3)),
        ("action_result", "undo failed", said("undo_failed", tier=3)),
        ("action_result", "tier 2 cancelled", said("cancelled", tier=2)),
        ("action_result", "tier 2 interrupted", said("interrupted", tier=2, found="2/3")),
        ("action_result", "could not carry out", said("crashed", code="kube_timeout", message="")),
        (
            "action_result",
            "tier 3 interrupted by a restart; found: ...",
            said(
                "interrupted",
                tier=3,
                found=[
                    {"code": "cordoned", "params": {"node": "gpu-node-01"}},
                    {"code": "evictions", "params": {"done": 1, "planned": 2}},
                    {"code": "check_spec", "params": {"target": "Deployment/ml/train"}},
                ],
            ),
        ),
        (
            "action_result",
            "tier 1 interrupted by a restart; found: could not read node ...",
            said(
                "interrupted",
                tier=1,
                found=[
                    {"code": "unreadable", "params": {"node": "gpu-node-01", "error": "timeout"}}
                ],
            ),
        ),
        (
            "action_result",
            "could not carry out the action (cluster_unreachable): cluster prod ...",
            said(
                "crashed",
                code="cluster_unreachable",
                message="cluster prod could not be reached (no answer in 10s); ...",
                cause="error",
                error="cluster prod could not be reached (no answer in 10s); ...",
                error_key="cluster_unreachable",
                error_params={"cluster": "prod", "waited_s": "10", "reason": "no answer in 10s"},
            ),
        ),
        (
            "action_result",
            "could not carry out the action (timeout): the API server did not answer in time",
            said("crashed", code="timeout", message="the API server ...", cause="timeout"),
        ),
        (
            "action_result",
            "watched: x",
            said(
                "watched",
                rollouts=[["ml/train", "applied"], ["ml/x", "stalled"]],
                evictions_done=False,
            ),
        ),
        ("approval", "approved", said("approved")),
        ("approval", "approved (more needed)", said("approved_more_needed")),
        ("approval", "denied", said("denied")),
        ("approval", "approval expired", said("expired")),
        ("note", "postmortem draft exported", said("postmortem_exported")),
        ("note", "prevention kit shared", said("prevention_shared")),
        ("resolved", "resolved", said("resolved")),
    ]
    return [
        TimelineEntry(
            incident_id="INC-0001",
            at=T0 + timedelta(minutes=i),
            kind=kind,  # type: ignore[arg-type]
            actor="U1",
            text=text,
            data=data,
        )
        for i, (kind, text, data) in enumerate(said_by_code)
    ]


def marker_and_timeline_words(locale: str, out: dict[str, object]) -> None:
    """The chart's marker labels (every marker kind, and an action marker per timeline code)
    and each timeline entry's clause, as the chart and the CLI show them."""
    t = translator(locale)
    actions = action_markers(
        [e.model_copy(update={"data": e.data | {"action_id": "A1"}}) for e in timeline_entries()],
        node="gpu-node-01",
    )
    out["chart.markers"] = [
        marker_label(m.kind, m.params, m.label, t) for m in [*MARKERS, *actions]
    ]
    out["timeline.entries"] = [
        entry_text(e.said, e.text, locale=locale) for e in timeline_entries()
    ]


def checkup_words(locale: str, out: dict[str, object]) -> None:
    """``gpunode doctor``'s table with a row of every code, both verdicts, and ``gpunode
    migrate``'s lines; the text a server or the OS wrote (quoted as it was said, in every
    language) left out."""
    rows = [row for row, _ in CHECKUP_SAMPLES]
    table = checkup.table(rows, locale=locale)
    for reason in QUOTED_REASONS:
        table = table.replace(reason, " ")
    out["doctor"] = [
        table,
        checkup.verdict(rows, locale=locale),
        checkup.verdict([], locale=locale),
    ]
    what, detail = checkup.row_words(rows[-1], locale=locale)
    out["migrate"] = [
        line("migrate_schema", 14, locale=locale),
        line("migrate_granted", "gpunode_app", 22, locale=locale),
        line("migrate_finding", True, what, detail, locale=locale),
        line("migrate_finding", False, what, detail, locale=locale),
    ]


def audit_words(locale: str, out: dict[str, object]) -> None:
    """``gpunode audit``'s table with a row of every detail code it words (each code the
    audit words itself has a sample)."""
    assert set(audit._AUDIT_WORDS) <= {r.detail_code for r in AUDIT_SAMPLES}
    out["audit"] = audit.format_text(AUDIT_SAMPLES, locale=locale)


def every_message(
    d: Diagnosis,
    bundle: EvidenceBundle | None,
    view: ClusterView | None,
    locale: str,
    *,
    strict: bool = True,
) -> dict[str, object]:
    """Name -> rendering, for every kind of message about ``d``, in ``locale``; ``strict``:
    every sentence must render without the fallback (a diagnosis from ``analyze``)."""
    out: dict[str, object] = {}
    [brief] = diagnosis_messages(d, bundle, incident="INC-0001", locale=locale)
    checked("brief", brief, out)
    details = details_view(d, bundle, incident="INC-0001", locale=locale)
    validate_blocks(details["blocks"], surface="modal")
    errors = blocks_errors(details["blocks"], surface="modal")
    assert errors == [], f"details: {errors}"
    out["details"] = details
    headline = verdict_headline(d, locale=locale)
    checked(
        "root",
        render_root(
            incident_id="INC-0001",
            node=d.node,
            state="investigating",
            headline=headline,
            opened_by="U1",
            progress="x",
            locale=locale,
        ),
        out,
    )
    if strict:
        out["sentences"] = strict_sentences(d, locale)
    action_flow(d, locale, out)
    checkup_words(locale, out)
    audit_words(locale, out)
    marker_and_timeline_words(locale, out)
    watching_messages(locale, out)
    documents(d, bundle, view, locale, out)
    return out
