"""The action flow's Block Kit: valid for Slack (the stand-in's validator), ids in buttons,
untrusted names escaped, the right buttons per state."""

from __future__ import annotations

import json
import typing
from datetime import UTC, datetime, timedelta

import pytest

from bot.core.diagnosis.findings import Diagnosis
from bot.core.governance.approvals import new_request
from bot.core.model.actions import ActionPlan, Step
from bot.core.model.changes import Change, EvictionOutcome
from bot.core.reporting.analysis import analyze
from bot.core.reporting.diffing import DiagnosisDiff, LedgerDelta, diff_diagnoses
from bot.errors import ForbiddenError
from bot.render import acting
from bot.services.executing import StepsResult
from gpunode_sandbox.slacksim.validation import blocks_errors, view_errors
from tests.render.told import render_notice
from tests.services.fakes import load_scenario

GIB = 1024**3

AT = datetime(2026, 3, 14, 9, 30, tzinfo=UTC)


@pytest.fixture(scope="module")
def seed() -> Diagnosis:
    bundle, view = load_scenario("seed")
    return analyze(bundle, view, now=bundle.collected_at + timedelta(seconds=30))


def _plan(d: Diagnosis, tier: int) -> ActionPlan:
    return next(p for p in d.plans if p.tier == tier)


def _buttons(blocks: list[dict[str, object]]) -> list[str]:
    out = []
    for b in blocks:
        if b.get("type") == "actions":
            out += [str(e["action_id"]) for e in b["elements"]]  # type: ignore[attr-defined]
    return out


@pytest.mark.parametrize("tier", [1, 2, 3])
def test_every_confirmation_modal_is_a_valid_view(seed: Diagnosis, tier: int) -> None:
    view = acting.confirmation_modal(
        _plan(seed, tier), diagnosis=seed, meta={"incident": "I"}, locale="en"
    )
    assert view_errors(view) == []
    ids = [b.get("block_id") for b in view["blocks"]]
    assert "reason" in ids
    assert ("memory_limit" in ids) == (tier == 3)


def _result(ok: bool) -> StepsResult:
    change = Change(
        verb="cordon",
        kind="Node",
        name="gpu-node-01",
        dry_run=True,
        patch={"spec": {"unschedulable": True}},
    )
    result = StepsResult(
        changes=[change],
        evictions=[
            EvictionOutcome(namespace="ml", name="a", status="dry_run", reason="<!channel>")
        ],
    )
    if not ok:
        result.error = ForbiddenError("no <rights>")
        result.failed_step = Step(verb="evict", kind="Pod", namespace="ml", name="x")
    return result


@pytest.mark.parametrize(
    ("ok", "buttons"), [(True, [acting.APPLY, acting.CANCEL]), (False, [acting.REDIAGNOSE])]
)
def test_the_dry_run_offers_apply_only_when_it_passed(
    seed: Diagnosis, ok: bool, buttons: list[str]
) -> None:
    _, blocks = acting.dry_run_message(
        _plan(seed, 1),
        action_id="A1",
        requester="U1",
        reason="r",
        result=_result(ok),
        needs_approval=True,
        locale="en",
    )
    assert blocks_errors(blocks) == []
    assert _buttons(blocks) == buttons
    text = json.dumps(blocks)
    assert "<!channel>" not in text and "&lt;!channel&gt;" in text  # escaped
    assert ("no &lt;rights&gt;" in text) == (not ok)


@pytest.mark.parametrize(
    ("state", "undo", "buttons"),
    [
        ("succeeded", True, [acting.UNDO]),
        ("failed", False, []),
        ("stale", False, [acting.REDIAGNOSE]),
        ("cancelled", False, []),
        ("denied", False, []),
        ("expired", False, []),
        ("awaiting_approval", False, []),
        ("undone", False, []),
        ("undo_failed", False, []),
    ],
)
def test_the_outcome_replaces_the_buttons(
    seed: Diagnosis, state: str, undo: bool, buttons: list[str]
) -> None:
    text, blocks = acting.outcome_message(
        _plan(seed, 3),
        action_id="A1",
        state=state,
        requester="U1",
        by="U2",
        reason="why",
        result=_result(state != "failed"),
        undo=undo,
        locale="en",
    )
    assert blocks_errors(blocks) == [] and text
    assert _buttons(blocks) == buttons


def test_the_approval_message_carries_only_the_request_id(seed: Diagnosis) -> None:
    req = new_request("R1", "A1", tier=1, requester="U1", quorum=1, at=AT, ttl_s=600)
    _, blocks = acting.approval_message(
        _plan(seed, 1), req, reason="r", roles=("approver",), locale="en"
    )
    assert blocks_errors(blocks) == []
    values = [e["value"] for b in blocks if b["type"] == "actions" for e in b["elements"]]  # type: ignore[attr-defined]
    assert values == ["R1", "R1"]


def test_the_diff_message_is_valid(seed: Diagnosis) -> None:
    _, blocks = acting.diff_message(diff_diagnoses(seed, seed), locale="en")
    assert blocks_errors(blocks) == []


@pytest.mark.parametrize(
    ("key", "params"),
    [
        ("approval_pending", {}),
        ("vote_counted", {"remaining": 1}),
        ("interrupted", {"action_id": "A1", "tier": 1, "observed": "x"}),
    ],
)
def test_every_notice_renders(key: str, params: dict[str, typing.Any]) -> None:
    text, blocks = render_notice(key, **params)
    assert text and blocks_errors(blocks) == []


@pytest.mark.parametrize(
    ("state", "by", "words"),
    [
        ("approved", "U2", "Approved* by <@U2>"),
        ("denied", "U2", "Denied* by <@U2>"),
        ("expired", "", "Expired*: nobody approved before"),
    ],
)
def test_a_closed_approval_message_has_its_outcome_and_no_buttons(
    seed: Diagnosis, state: str, by: str, words: str
) -> None:
    req = new_request("R1", "A1", tier=1, requester="U1", quorum=1, at=AT, ttl_s=600)
    text, blocks = acting.approval_closed(
        _plan(seed, 1), req, state=state, by=by, reason="r", locale="en"
    )
    assert blocks_errors(blocks) == [] and text
    assert _buttons(blocks) == []
    assert words in json.dumps(blocks)


def _change_verbs() -> list[str]:
    return list(typing.get_args(Change.model_fields["verb"].annotation))


@pytest.mark.parametrize("verb", _change_verbs())
@pytest.mark.parametrize("dry_run", [True, False])
def test_every_change_verb_reads_as_words(verb: str, dry_run: bool) -> None:
    change = Change(verb=verb, kind="Deployment", namespace="ml", name="x", dry_run=dry_run)  # type: ignore[arg-type]
    line = str(acting._t(locale="en").change_line(change, [])).strip()
    assert verb not in line or "_" not in verb, line
    assert line.startswith("• ") and "`ml/x`" in line


def test_each_list_of_the_diff_findings_is_on_its_own_line() -> None:
    diff = DiagnosisDiff(
        node="n1",
        verdict_before="host_memory_workload",
        verdict_after="healthy",
        resolved_findings=["CONTAINER_NEAR_LIMIT:ml/a"],
        new_findings=["MEMORY_AVAILABLE_LOW:n1"],
        kept_findings=["LIMITS_OVERCOMMITTED:n1"],
    )
    _, blocks = acting.diff_message(diff, locale="en")
    text = blocks[-1]["text"]["text"]  # type: ignore[index]
    lines = [line for line in text.split("\n") if "(1): " in line]
    assert len(lines) == 3
    assert "Resolved (1): container near its memory limit (`ml/a`)" in lines[0]
    assert "New (1): little memory available (`n1`)" in lines[1]
    assert "Still open (1): memory limits overcommitted (`n1`)" in lines[2]


def test_the_diff_names_a_few_findings_and_counts_the_rest() -> None:
    kept = [f"MEMORY_ABOVE_REQUEST:ns/pod-{i}" for i in range(8)]
    diff = DiagnosisDiff(
        node="n1", verdict_before="healthy", verdict_after="healthy", kept_findings=kept
    )
    _, blocks = acting.diff_message(diff, locale="en")
    text = blocks[-1]["text"]["text"]  # type: ignore[index]
    assert "Still open (8):" in text and "and 5 more" in text
    assert "`ns/pod-2`" in text and "`ns/pod-3`" not in text


def test_the_diff_offers_the_tiers_of_the_new_evidence_with_their_buttons() -> None:
    diff = DiagnosisDiff(node="n1", verdict_before="healthy", verdict_after="healthy")
    _, blocks = acting.diff_message(diff, incident_id="INC-1", next_tiers=((1, "p1"),), locale="en")
    actions = blocks[-1]
    assert actions["type"] == "actions"
    [button] = actions["elements"]  # type: ignore[index]
    assert button["action_id"] == "gpunode_tier1"
    assert json.loads(button["value"]) == {"incident": "INC-1", "plan_id": "p1"}
    _, none = acting.diff_message(diff, incident_id="INC-1", next_tiers=(), locale="en")
    assert "offers no further tier" in none[-1]["text"]["text"]  # type: ignore[index]


@pytest.mark.parametrize(
    ("tier", "words", "not_words"),
    [
        (2, "priority is immutable", "pod template"),
        (3, "the new caps change the pod template of `Deployment/ml/preprocess`", "immutable"),
    ],
)
def test_the_modal_says_why_pods_restart_for_its_tier(
    seed: Diagnosis, tier: int, words: str, not_words: str
) -> None:
    plan = _plan(seed, tier)
    assert plan.restarts
    text = str(acting._t(locale="en").modal_restarts(plan))
    assert words in text and not_words not in text
    assert all(f"`{r}`" in text for r in plan.restarts)


def test_the_diff_names_ledger_categories_in_words_and_says_free_memory_once() -> None:
    diff = DiagnosisDiff(
        node="n1",
        verdict_before="healthy",
        verdict_after="healthy",
        ledger=[
            LedgerDelta(label="free", before_bytes=2 * GIB, after_bytes=60 * GIB),
            LedgerDelta(label="ml/pre-1", before_bytes=58 * GIB, after_bytes=0),
            LedgerDelta(label="page_cache", before_bytes=4 * GIB, after_bytes=3 * GIB),
        ],
        available_before_bytes=2 * GIB,
        available_after_bytes=60 * GIB,
    )
    for locale, cache in (("en", "page cache"), ("zh-CN", "页缓存")):
        _, blocks = acting.diff_message(diff, locale)
        text = blocks[-1]["text"]["text"]  # type: ignore[index]
        assert "page_cache" not in text and f"• {cache}" in text
        assert "`ml/pre-1`" in text
        assert text.count("60.0 GiB") == 1, text  # in the summary, not again as a ledger line
