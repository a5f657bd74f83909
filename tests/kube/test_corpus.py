"""The labelled incident corpus, end to end: every shipped scenario with an ``expected:`` block
is diagnosed through the real collector (the stand-in's diagnostic Job on the generated host
tree), the real gateway (official client over HTTP) and the real analysis, and compared with
its label (``gpunode_sandbox.corpus.compare``). One stand-in and one diagnosis per scenario
and test process (``tests/kube/judged.py``), shared with the every-locale rendering test.

Labels are the expert's reading of each scenario's numbers, written before the verdict was;
a disagreement the analysis has not fixed yet is listed in ``DISAGREES`` (strict xfail: when
the analysis gets it right the test fails until the entry is removed), never by editing the
label to match.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import pytest

from bot.core.diagnosis.findings import VerdictCause
from gpunode_sandbox.advice_checks import check
from gpunode_sandbox.corpus import compare, corpus_names, gpu_uuids, judge, outcome
from gpunode_sandbox.kubesim import KubeSim, load_scenario
from gpunode_sandbox.kubesim.expectations import Expected, TierExpectation
from tests.kube.judged import judged

pytestmark = pytest.mark.slow

#: scenario -> why the analysis disagrees with the label today (see the closing report)
DISAGREES: dict[str, str] = {}


#: scenario -> which expert invariant (``gpunode_sandbox.advice_checks``) its advice breaks today
ADVICE_BROKEN: dict[str, str] = {}


def _param(name: str, known: dict[str, str] = DISAGREES) -> object:
    reason = known.get(name)
    marks = [pytest.mark.xfail(reason=reason, strict=True)] if reason else []
    return pytest.param(name, id=name, marks=marks)


def test_the_corpus_has_43_labelled_scenarios_covering_every_verdict_cause() -> None:
    names = corpus_names()
    causes = {load_scenario(n).expected.cause for n in names}  # type: ignore[union-attr]

    assert len(names) >= 43
    assert causes == set(VerdictCause.__args__)  # type: ignore[attr-defined]
    assert {"seed", "slab-leak", "gpu-bound", "limit-edge", "healthy"} <= set(names)


@pytest.mark.parametrize("name", [_param(n) for n in corpus_names()])
async def test_each_corpus_scenario_gets_its_labelled_verdict_and_plans(name: str) -> None:
    scenario = load_scenario(name)

    diagnosis, bundle, _ = await judged(name)

    result = outcome(scenario, diagnosis, bundle)
    assert result.problems == [], f"{result.expected} | got {result.got}"


@pytest.mark.parametrize("name", [_param(n, ADVICE_BROKEN) for n in corpus_names()])
async def test_every_expert_invariant_holds_on_each_corpus_scenario(name: str) -> None:
    diagnosis, bundle, view = await judged(name)

    broken = [str(v) for v in check(bundle, view, diagnosis)]

    assert broken == []


async def test_a_wrong_label_is_reported_on_every_count(
    make_kubesim: Callable[..., Awaitable[KubeSim]],
) -> None:
    scenario = load_scenario("issue-host-daemon")
    sim = await make_kubesim(scenario)
    diagnosis, bundle = await judge(scenario, url=sim.url)
    wrong = Expected(
        node="gpu-node-08",
        cause="kernel_slab",
        subject="gpu-node-08",
        contributing=[{"cause": "hugepages"}],  # type: ignore[list-item]
        tiers={3: TierExpectation(relief={"min": "1Ti"})},  # type: ignore[arg-type]
        runbook="no-such.service",
        shortage={"max": 0},  # type: ignore[arg-type]
        why="deliberately wrong",
    )

    problems = compare(wrong, diagnosis, gpus=gpu_uuids(bundle))

    text = "\n".join(problems)
    for part in (
        "cause system_process",
        "subject",
        "contributing hugepages",
        "tier 3",
        "no-such.service",
        "shortage",
    ):
        assert part in text, problems


def test_the_corpus_table_prints_one_row_per_scenario_and_its_disagreements(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from gpunode_sandbox.corpus_table import main

    status = main(["limit-edge", "gpu-bound"])

    out = capsys.readouterr().out.splitlines()
    assert out[0] == "| scenario | expected | got | advice expected | advice got | ok |"
    rows = [line for line in out if line.startswith(("| limit-edge ", "| gpu-bound "))]
    assert len(rows) == 2 and all(row.endswith(("| yes |", "| NO |")) for row in rows)
    agreed = sum(row.endswith("| yes |") for row in rows)
    assert f"{agreed}/2 agree" in out
    assert status == (0 if agreed == 2 else 1)


async def test_wrong_advice_ranges_are_reported_on_every_value() -> None:
    diagnosis, bundle, _ = await judged("many-small-pods-one-owner")
    label = load_scenario("many-small-pods-one-owner").expected
    assert label is not None
    wrong = label.model_copy(
        update={
            "tiers": {
                1: TierExpectation.model_validate(
                    {"evicts": {"min": 40}, "evicted": ["web/no-such-pod"]}
                ),
                3: TierExpectation.model_validate(
                    {"cap": {"min": "100Gi"}, "container": "sidecar", "restarts": {"max": 2}}
                ),
            }
        }
    )

    problems = compare(wrong, diagnosis, gpus=gpu_uuids(bundle))

    text = "\n".join(problems)
    for part in (
        "tier 1 evicts",
        "does not evict web/no-such-pod",
        "tier 3 cap",
        "caps container gateway (expected sidecar)",
        "restarts 48 pods",
    ):
        assert part in text, problems
