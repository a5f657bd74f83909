"""Lines that follow a block tag keep their line break in every locale (``trim_blocks``
swallows the newline right after ``{% endif %}``/``{% for %}``, which ran steps, notes and
the approval's last line together: "• cordon `x`• evict `y`", "…mode.Applying", "_why_det")."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from bot.core.diagnosis.findings import Diagnosis
from bot.core.governance.approvals import new_request
from bot.core.remedies.watching import PodProgress, RolloutProgress
from bot.core.reporting.analysis import analyze
from bot.render import acting, environment, watching
from bot.render.environment import LOCALES
from tests.services.fakes import load_scenario

T0 = datetime(2026, 12, 1, 2, 0, tzinfo=UTC)


@pytest.fixture(scope="module")
def seed() -> Diagnosis:
    bundle, view = load_scenario("seed")
    return analyze(bundle, view, now=bundle.collected_at)


def _body(message: tuple[str, list[dict[str, object]]], index: int = 0) -> str:
    return str(message[1][index]["text"]["text"])  # type: ignore[index]


@pytest.mark.parametrize("locale", LOCALES)
def test_each_modal_step_is_on_its_own_line(seed: Diagnosis, locale: str) -> None:
    plan = next(p for p in seed.plans if len(p.steps) > 1)
    t = environment.macros("slack", "acting.j2", locale=locale)
    lines = str(t.modal_steps(plan)).strip().split("\n")
    assert len(lines) == 1 + len(plan.steps)
    assert all(line.startswith("• ") for line in lines[1:])


@pytest.mark.parametrize("locale", LOCALES)
def test_the_dry_run_summary_and_the_outcome_keep_their_lines(seed: Diagnosis, locale: str) -> None:
    t = environment.macros("slack", "acting.j2", locale=locale)
    plan = seed.plans[0]
    assert len(str(t.dry_run_summary(plan, "U1", "why", True, True)).strip().split("\n")) == 3
    outcome = str(t.outcome_summary(plan, "succeeded", "U1", "U2", "why", "the detail"))
    assert outcome.strip().endswith("_\nthe detail")


@pytest.mark.parametrize("locale", LOCALES)
def test_an_expired_approval_keeps_its_last_line_apart(seed: Diagnosis, locale: str) -> None:
    req = new_request("R1", "A1", tier=1, requester="U1", quorum=2, at=T0, ttl_s=600)
    message = acting.approval_closed(
        seed.plans[0], req, state="expired", by="", reason="why", locale=locale
    )
    body = _body(message)
    assert "_why_\n" in body and len(body.split("\n")) == 2


@pytest.mark.parametrize("locale", LOCALES)
def test_each_pod_reason_and_problem_of_a_rollout_is_on_its_own_line(locale: str) -> None:
    progress = RolloutProgress(
        kind="Deployment",
        namespace="ml",
        name="x",
        desired=2,
        pods=[
            PodProgress(key="ml/x-1", phase="Pending", current=True, reason="Unschedulable"),
            PodProgress(key="ml/x-2", phase="Pending", current=True, reason="Unschedulable"),
        ],
        problems=["0/3 nodes are available", "quota exceeded"],
    )
    body = _body(watching.rollout_message(progress, "stalled", waited_s=60, locale=locale))
    assert len(body.split("\n")) == 1 + 2 + 2


@pytest.mark.parametrize("locale", LOCALES)
def test_each_note_before_a_confirmation_is_on_its_own_line(locale: str) -> None:
    t = environment.macros("slack", "watching.j2", locale=locale)
    text = str(t.modal_notes(["one.", "two."])).strip()
    assert text.split("\n")[1:] == [":warning: one.", ":warning: two."]
