"""A step the cluster refused (gpunode acting as a person, or any keyed error) reads in the
reader's language in the action's message, as it ran and as stored and read back; an English
reader reads the error's own text, and a row stored before errors carried their key still
shows its English message."""

from __future__ import annotations

import asyncio
import json
from datetime import timedelta
from types import SimpleNamespace
from typing import cast

import pytest
from kubernetes.client.exceptions import ApiException

from bot.core.diagnosis.findings import Diagnosis
from bot.core.model.actions import ActionPlan, Step
from bot.core.model.changes import EvictionOutcome
from bot.core.remedies.landing import Landing
from bot.core.reporting.analysis import analyze
from bot.core.reporting.outcomes import StepError, StepsReport
from bot.errors import GpunodeError, WriteUnknownError
from bot.kube import draining
from bot.kube.doing import Doing
from bot.kube.errors import refused_as, translate
from bot.kube.transport import Transport
from bot.kube.unanswered import unanswered
from bot.render import acting
from bot.services.executing import StepsResult, run_steps
from bot.services.ports import KubePort
from bot.services.settling import Settled
from tests.render.test_catalogs import _texts, english_words
from tests.services.fakes import load_scenario

#: the API server's 403 when alice may not evict in data-prep, as RBAC writes it
DENIED = (
    'pods "train-0" is forbidden: User "alice" cannot create resource "pods/eviction" in API '
    'group "" in the namespace "data-prep"'
)


@pytest.fixture(scope="module")
def plan() -> ActionPlan:
    bundle, view = load_scenario("seed")
    d: Diagnosis = analyze(bundle, view, now=bundle.collected_at + timedelta(seconds=30))
    return next(p for p in d.plans if p.tier == 1)


def _api(status: int, message: str) -> ApiException:
    exc = ApiException(status=status, reason="Forbidden")
    exc.body = json.dumps({"kind": "Status", "message": message})
    return exc


def _refused() -> GpunodeError:
    refusal = refused_as(_api(403, DENIED), "alice")
    assert refusal is not None and refusal.key == "cluster_refused"
    return refusal


def _failed(plan: ActionPlan, error: GpunodeError) -> StepsResult:
    step = next(s for s in plan.steps if s.verb == "evict")
    return StepsResult(failed_step=step, error=error, not_run=[])


def _message_text(plan: ActionPlan, result: object, locale: str) -> str:
    text, blocks = acting.outcome_message(
        plan,
        action_id="A1",
        state="failed",
        requester="U1",
        by="U1",
        reason="演练",
        result=result,
        undo=False,
        locale=locale,
    )
    return "\n".join([text, *_texts(blocks)])


@pytest.mark.parametrize("stored", [False, True], ids=["as-run", "stored"])
def test_a_chinese_reader_reads_the_clusters_refusal_of_a_step_in_chinese(
    plan: ActionPlan, stored: bool
) -> None:
    result = _failed(plan, _refused())
    shown = StepsReport.from_json(result.as_json()) if stored else result
    said = _message_text(plan, shown, "zh-CN")
    assert "alice" in said and "data-prep" in said
    assert _refused().message not in said
    assert english_words(said) == [], said


@pytest.mark.parametrize("stored", [False, True], ids=["as-run", "stored"])
def test_a_failed_request_of_a_step_names_the_request_in_chinese(
    plan: ActionPlan, stored: bool
) -> None:
    """A step whose request met no answer: the error and the request it answered are worded
    (the API server's URL is all that stays as it was)."""
    error = translate(
        ConnectionRefusedError("refused"),
        what=Doing.of("evict", namespace="data-prep", name="train-0"),
        write=True,
    )
    result = _failed(plan, error)
    shown = StepsReport.from_json(result.as_json()) if stored else result
    said = _message_text(plan, shown, "zh-CN")
    assert "驱逐 Pod data-prep/train-0" in said
    assert english_words(said) == [], said


def test_an_english_reader_reads_the_errors_own_text(plan: ActionPlan) -> None:
    error = _refused()
    result = _failed(plan, error)
    for shown in (result, StepsReport.from_json(result.as_json())):
        assert error.message in _message_text(plan, shown, "en")


def test_a_step_error_stored_before_it_carried_its_key_shows_its_english_message(
    plan: ActionPlan,
) -> None:
    step = next(s for s in plan.steps if s.verb == "evict")
    stored = StepsReport.from_json(
        {
            "failed_step": step.model_dump(mode="json"),
            "error": {"code": "cluster_refused", "message": "the cluster refused: old words"},
        }
    )
    assert stored is not None and stored.error == StepError(
        code="cluster_refused", message="the cluster refused: old words"
    )
    assert "the cluster refused: old words" in _message_text(plan, stored, "zh-CN")


@pytest.mark.parametrize("landed", [False, True, None], ids=["not-landed", "landed", "unknown"])
def test_a_write_that_got_no_answer_reads_in_chinese_whatever_the_re_read_found(
    plan: ActionPlan, landed: bool | None
) -> None:
    """The eviction was sent and no answer came; the re-read found it did not land, that it
    landed (its state before unknown), or failed too: each reads in Chinese with its request,
    in the failed step's line and in the unanswered write's line (with the re-read's own
    failure worded too)."""
    step = next(s for s in plan.steps if s.verb == "evict")
    t = cast(Transport, SimpleNamespace(timeout_s=10))
    what = Doing.of("evict", namespace=step.namespace, name=step.name)
    with (
        pytest.raises(WriteUnknownError) as caught,
        unanswered(t, what, {"verb": "evict"}, dry_run=False),
    ):
        raise TimeoutError("timed out")
    found = None if landed is None else Landing(landed=landed, seen="running")
    reread = translate(
        ConnectionRefusedError("refused"),
        what=Doing.of("reread_object", kind="Pod", namespace=step.namespace, name=step.name),
    )
    settled = Settled(
        step,
        caught.value,
        found,
        reread_error=reread.message if found is None else "",
        reread_key=reread.key if found is None else "",
        reread_params=reread.params if found is None else {},
    )
    error = settled.failure()
    result = _failed(plan, error)
    result.unanswered.append(settled.as_json())
    for shown in (result, StepsReport.from_json(result.as_json())):
        said = _message_text(plan, shown, "zh-CN")
        assert f"驱逐 Pod {step.namespace}/{step.name}" in said, said
        assert english_words(said) == [], said
        assert error.message in _message_text(plan, shown, "en")


def _api_eviction(status: int, message: str, causes: list[dict[str, str]] | None = None) -> object:
    exc = ApiException(status=status, reason="Reason")
    exc.body = json.dumps({"kind": "Status", "message": message, "details": {"causes": causes}})
    return exc


class _Refusing:
    """A transport whose eviction POST meets ``exc``; the budgets list finds none."""

    timeout_s = 10

    def __init__(self, exc: object) -> None:
        self.exc = exc

    def request(self, *args: object, **kwargs: object) -> object:
        raise self.exc  # type: ignore[misc]

    def get(self, path: str) -> object:
        return {"metadata": {"labels": {}}}

    def list_all(self, path: str) -> list[object]:
        return []


class _Evicting:
    """The KubePort an eviction step needs: ``evict`` raises ``error``; the re-read after a
    write that got no answer finds the pod gone."""

    def __init__(self, error: GpunodeError) -> None:
        self.error = error

    async def evict(self, namespace: str, name: str, *, dry_run: bool) -> object:
        raise self.error

    async def read_target(self, kind: str, namespace: str, name: str) -> None:
        return None


def _evictions(step: Step) -> list[EvictionOutcome]:
    """Every reason an eviction reports: the API server's answers (a budget, with and without
    its counts; throttling; the pod gone; several budgets; a server failure), a request with
    no answer at all, and a write with no answer whose re-read finds the pod gone."""
    budget = "Cannot evict pod as it would violate the pod's disruption budget."
    answers = [
        _api_eviction(
            429,
            budget,
            [
                {
                    "reason": "DisruptionBudget",
                    "message": (
                        "The disruption budget train-pdb needs 2 healthy pods and has 2 currently"
                    ),
                }
            ],
        ),
        _api_eviction(429, budget, [{"reason": "DisruptionBudget", "message": budget}]),
        _api_eviction(429, "Too many requests"),
        _api_eviction(404, 'pods "x" not found'),
        _api_eviction(500, "This pod has more than one PodDisruptionBudget"),
        _api_eviction(500, "etcdserver: request timed out"),
    ]
    out = [
        draining.evict(cast(Transport, _Refusing(a)), step.ref.namespace, step.name, dry_run=False)
        for a in answers
    ]
    what = Doing.of("evict", namespace=step.ref.namespace, name=step.name)
    refused = translate(ConnectionRefusedError("refused"), what=what)
    with (
        pytest.raises(WriteUnknownError) as caught,
        unanswered(cast(Transport, _Refusing(None)), what, {"verb": "evict"}, dry_run=False),
    ):
        raise TimeoutError("timed out")
    for error in (refused, caught.value):
        ran = asyncio.run(run_steps(cast(KubePort, _Evicting(error)), [step], dry_run=False))
        out += ran.evictions
    return out


@pytest.mark.parametrize("stored", [False, True], ids=["as-run", "stored"])
def test_every_reason_an_eviction_reports_reads_in_chinese(plan: ActionPlan, stored: bool) -> None:
    step = next(s for s in plan.steps if s.verb == "evict")
    evictions = _evictions(step)
    assert all(e.reason_key for e in evictions), evictions
    assert {e.status for e in evictions} == {"blocked", "failed", "not_found", "evicted"}
    result = StepsResult(evictions=evictions)
    shown = StepsReport.from_json(result.as_json()) if stored else result
    for e in evictions:
        assert e.reason in _message_text(plan, shown, "en")
    said = _message_text(plan, shown, "zh-CN")
    for quoted in ("etcdserver: request timed out",):
        said = said.replace(quoted, " ")
    assert english_words(said) == [] and "(unknown)" not in said, said
