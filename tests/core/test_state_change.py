"""The one line a re-diagnosis leaves: the biggest movers by workload (free memory left out),
the OOM kills new since the last diagnosis, the verdict when it changed."""

from __future__ import annotations

from datetime import timedelta

import pytest

from bot.core.diagnosis.findings import Diagnosis, Finding, LedgerEntry
from bot.core.reporting.analysis import analyze
from bot.core.reporting.state_change import state_change
from bot.render.state import state_change_line
from tests.services.fakes import load_scenario

GIB = 1 << 30


@pytest.fixture(scope="module")
def seed() -> Diagnosis:
    bundle, view = load_scenario("seed")
    return analyze(bundle, view, now=bundle.collected_at + timedelta(seconds=30))


def _with(d: Diagnosis, entries: list[LedgerEntry], findings: list[Finding]) -> Diagnosis:
    ledger = d.ledger.model_copy(update={"entries": entries})
    return d.model_copy(update={"ledger": ledger, "findings": findings})


def _pod(key: str, gib: float) -> LedgerEntry:
    return LedgerEntry(category="pod", label=key, bytes=int(gib * GIB), source="s", pod_key=key)


def _kill(pid: int, pod: str) -> Finding:
    params: dict[str, str | int | float] = {"pid": pid, "comm": "python", "pod": pod}
    return Finding(code="KERNEL_OOM_KILL", severity="warning", subject=pod, params=params)


def test_the_movers_are_workloads_biggest_first_and_free_memory_is_not_one(
    seed: Diagnosis,
) -> None:
    free = LedgerEntry(category="free", label="free", bytes=2 * GIB, source="s")
    before = _with(seed, [_pod("ml/trainer-7d9f8c6b5d-x2k4p", 60), _pod("ml/prep-0", 4), free], [])
    after = _with(
        seed,
        [
            _pod("ml/trainer-7d9f8c6b5d-q8z9w", 62.1),  # replaced: the same workload
            _pod("ml/prep-0", 1),
            free.model_copy(update={"bytes": 1 * GIB}),
        ],
        [],
    )

    change = state_change(before, after)

    assert [(m.label, round(m.delta_bytes / GIB, 1)) for m in change.movers] == [
        ("ml/prep-0", -3.0),
        ("ml/trainer", 2.1),
    ]
    assert change.since == before.collected_at and not change.verdict_changed


def test_only_kills_new_since_the_last_diagnosis_are_counted(seed: Diagnosis) -> None:
    old = _kill(4242, "ml/trainer-7d9f8c6b5d-x2k4p")
    replaced = _kill(4242, "ml/trainer-7d9f8c6b5d-q8z9w")  # the same kill, the pod replaced
    new = _kill(5151, "ml/trainer-7d9f8c6b5d-q8z9w")

    change = state_change(_with(seed, [], [old]), _with(seed, [], [replaced, new]))

    assert change.new_kills == 1


def test_the_line_is_one_line_in_the_threads_language(seed: Diagnosis) -> None:
    before = _with(seed, [_pod("ml/trainer-0", 60)], [])
    after = _with(seed, [_pod("ml/trainer-0", 62.1)], [_kill(7, "ml/trainer-0")])
    change = state_change(before, after)

    en = state_change_line(change, "en")
    zh = state_change_line(change, "zh-CN")

    assert "`ml/trainer-0` +2.1 GiB" in en and "1 new OOM kill" in en and "\n" not in en
    assert "自" in zh and "1 次新的 OOM 终止" in zh
    quiet = state_change_line(state_change(seed, seed), "en")
    assert "no change since" in quiet
