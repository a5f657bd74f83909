"""The tier-3 form's errors, shown beside their fields, are worded in the reader's language:
each carries a key and raw parameters beside its English text, and an English reader reads
exactly that text. Every error here is made by the validation itself, from bad edits."""

from __future__ import annotations

from datetime import timedelta

import pytest

from bot.core.model.actions import ActionPlan
from bot.core.remedies.editing import FieldError, Tier3Bounds, Tier3Edits, apply_tier3_edits
from bot.core.reporting.analysis import analyze
from bot.render.errors import field_text
from tests.render.test_catalogs import english_words
from tests.services.fakes import load_scenario

BOUNDS = Tier3Bounds(memory_bytes=2**40, cpu_millis=64000, memory_text="1Ti", cpu_text="64")
#: bad edits, each refused by a different check
BAD: list[dict[str, object]] = [
    {"memory_limit": "lots"},
    {"memory_limit": "x" * 65},
    {"memory_limit": "0"},
    {"memory_limit": "2Ti"},
    {"memory_limit": "9999999999999999999999"},
    {"memory_request": "80Gi"},
    {"cpu_limit": "fast"},
    {"cpu_limit": "0"},
    {"cpu_limit": "128"},
    {"cpu_limit": "2", "cpu_request": "4"},
    {"omp_num_threads": 40000},
    {"memory_limit": "40Gi", "memory_request": "30Gi"},
]


@pytest.fixture(scope="module")
def plan() -> ActionPlan:
    bundle, view = load_scenario("seed")
    d = analyze(bundle, view, now=bundle.collected_at + timedelta(seconds=30))
    return next(p for p in d.plans if p.tier == 3)


def _errors(plan: ActionPlan) -> list[str]:
    out: list[str] = []
    for change in BAD:
        edits = Tier3Edits.model_validate(
            {"memory_limit": "70Gi", "memory_request": "60Gi"} | change
        )
        result = apply_tier3_edits(plan, edits, bounds=BOUNDS)
        assert isinstance(result, dict), change
        out += result.values()
    tier2 = plan.model_copy(update={"tier": 2})
    result = apply_tier3_edits(tier2, Tier3Edits(memory_limit="1Gi", memory_request="1Gi"))
    assert isinstance(result, dict)
    return [*out, *result.values()]


def test_every_field_error_carries_a_key(plan: ActionPlan) -> None:
    errors = _errors(plan)
    assert all(isinstance(e, FieldError) and e.key for e in errors), errors
    assert len({e.key for e in errors if isinstance(e, FieldError)}) >= 10


def test_an_english_reader_sees_each_field_errors_own_text(plan: ActionPlan) -> None:
    for error in _errors(plan):
        assert field_text(error, "en") == error


def test_a_chinese_reader_sees_no_english_sentence_beside_a_field(plan: ActionPlan) -> None:
    for error in _errors(plan):
        zh = field_text(error, "zh-CN")
        assert zh != error and english_words(zh) == [], zh
        assert english_words(field_text(error, "en-XA")) == []
