"""Before/after diffs: ledger moves above the noise floor, findings resolved/new/kept."""

from __future__ import annotations

from datetime import timedelta

import pytest

from bot.core.diagnosis.findings import Diagnosis, Finding, LedgerEntry
from bot.core.reporting.analysis import analyze
from bot.core.reporting.diffing import diff_diagnoses
from tests.services.fakes import load_scenario

GIB = 1 << 30


@pytest.fixture(scope="module")
def seed() -> Diagnosis:
    bundle, view = load_scenario("seed")
    return analyze(bundle, view, now=bundle.collected_at + timedelta(seconds=30))


def _with(d: Diagnosis, entries: list[LedgerEntry], findings: list[Finding]) -> Diagnosis:
    ledger = d.ledger.model_copy(update={"entries": entries})
    return d.model_copy(update={"ledger": ledger, "findings": findings})


def test_identical_diagnoses_show_no_change(seed: Diagnosis) -> None:
    diff = diff_diagnoses(seed, seed)
    assert diff.ledger == [] and diff.resolved_findings == [] and diff.new_findings == []
    assert len(diff.kept_findings) == len([f for f in seed.findings if f.severity != "ok"])


def test_moves_below_64_mib_are_noise_and_larger_ones_are_listed_biggest_first(
    seed: Diagnosis,
) -> None:
    pod = LedgerEntry(category="pod", label="p", bytes=60 * GIB, source="s", pod_key="ml/p")
    free = LedgerEntry(category="free", label="free", bytes=2 * GIB, source="s")
    kernel = LedgerEntry(category="kernel_other", label="k", bytes=10 * GIB, source="s")
    before = _with(seed, [pod, free, kernel], [])
    after = _with(
        seed,
        [
            pod.model_copy(update={"bytes": 0}),
            free.model_copy(update={"bytes": 50 * GIB}),
            kernel.model_copy(update={"bytes": 10 * GIB + (32 << 20)}),
        ],
        [],
    )
    diff = diff_diagnoses(before, after)
    assert [(r.label, r.delta_bytes) for r in diff.ledger] == [
        ("ml/p", -60 * GIB),
        ("free", 48 * GIB),
    ]
    assert (diff.available_before_bytes, diff.available_after_bytes) == (2 * GIB, 50 * GIB)


def test_findings_are_split_into_resolved_new_and_kept(seed: Diagnosis) -> None:
    a = Finding(code="A", severity="critical", subject="n")
    b = Finding(code="B", severity="warning", subject="n")
    c = Finding(code="C", severity="warning", subject="n")
    ok = Finding(code="OK", severity="ok", subject="n")
    diff = diff_diagnoses(_with(seed, [], [a, b, ok]), _with(seed, [], [b, c]))
    assert diff.resolved_findings == ["A:n"]
    assert diff.new_findings == ["C:n"]
    assert diff.kept_findings == ["B:n"]


def test_a_replaced_pods_old_kill_is_not_new_and_findings_read_by_workload() -> None:
    from datetime import UTC, datetime

    from bot.core.diagnosis.findings import Finding
    from bot.core.reporting.analysis import analyze
    from bot.core.reporting.diffing import diff_diagnoses
    from tests.core.analysis_builders import bundle, meminfo

    at = datetime(2026, 12, 1, 6, 0, tzinfo=UTC)
    base = analyze(bundle(meminfo=meminfo(256)), None, now=at)

    def with_findings(*findings: Finding) -> object:
        return base.model_copy(update={"findings": list(findings)})

    def kill(subject: str, pod: str, killed_at: str) -> Finding:
        return Finding(
            code="KERNEL_OOM_KILL",
            severity="warning",
            subject=subject,
            params={"pid": 2210433, "comm": "python", "pod": pod, "killed_at": killed_at},
        )

    near = Finding(
        code="CONTAINER_NEAR_LIMIT",
        severity="critical",
        subject="data-prep/preprocess-rbrtfs528j-z74mt",
    )
    near_new_pod = near.model_copy(update={"subject": "data-prep/preprocess-bcdfg2456-x7k9q"})
    before = with_findings(
        kill(
            "data-prep/preprocess-rbrtfs528j-z74mt",
            "data-prep/preprocess-rbrtfs528j-z74mt",
            "2026-12-01T05:52:00+00:00",
        ),
        near,
    )
    # the pod was replaced: the same kernel record now points at its uid, its time re-derived
    after = with_findings(kill("pod-uid/d8b62765", "", "2026-12-01T05:59:00+00:00"), near_new_pod)
    diff = diff_diagnoses(before, after)  # type: ignore[arg-type]
    assert diff.new_findings == [] and diff.resolved_findings == []
    assert diff.kept_findings == [
        "CONTAINER_NEAR_LIMIT:data-prep/preprocess",
        "KERNEL_OOM_KILL:data-prep/preprocess",
    ]
