"""Tier 1's predictions of where evicted pods go hold on any generated node, with pod
affinity, anti-affinity and topology spread planted around it with known answers
(``placing.py``): each evicted pod that can only go Pending is said to, for the right
reason, each one that fits elsewhere is not, and every count the plan states holds."""

from __future__ import annotations

import random
from collections import Counter

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bot.core.reporting.analysis import analyze
from bot.render.sentences import sentence
from gpunode_sandbox.advice_checks import by_invariant, check
from tests.core.generating import AT, CLASSES, plant
from tests.core.placing import ROLES, Placed, place
from tests.core.test_advice_invariants import SETTINGS

SEEDS = st.integers(min_value=0, max_value=2**32 - 1)


def _placed(cls: str, seed: int) -> Placed:
    rng = random.Random(seed)
    return place(plant(cls, rng), rng)


def _problems(placed: Placed) -> list[str]:
    """Where tier 1's plan disagrees with the planted answers, or a stated count is off."""
    d = analyze(placed.planted.bundle, placed.view, now=AT)
    [t1] = [p for p in d.plans if p.tier == 1]
    evicted = [k for k in t1.blast_radius if k in placed.answers]
    said = [n for n in t1.notes if n.code == "evicted_pending"]
    out = []
    counts = Counter(str(n.params["pod"]) for n in said)
    out += [f"{k} named {c} times" for k, c in counts.items() if c > 1]
    out += [f"{k} is said Pending but not evicted" for k in counts if k not in t1.blast_radius]
    reasons: dict[str, object] = {str(n.params["pod"]): n.params["why"] for n in said}
    scaled = [n for n in t1.notes if n.code in ("evicted_scales_up", "evicted_buys_gpu_node")]
    for n in scaled:
        if str(n.params["pod"]) in reasons:
            out.append(f"{n.params['pod']} is said both Pending and to scale up")
        reasons[str(n.params["pod"])] = "scales_up"
        if n.code != "evicted_scales_up" or n.params["pool"] != "gen-pool":
            out.append(f"{n.params['pod']}: {n.code} to {n.params['pool']}")
    for key in evicted:
        want, got = placed.answers[key], reasons.get(key)
        if want != got:
            out.append(f"{key} ({placed.roles[key]}): planted {want}, plan says {got}")
    # the plan's own counts: evictions are its steps, and each note is worded in full
    steps = [f"{s.namespace}/{s.name}" for s in t1.steps if s.verb == "evict"]
    if sorted(steps) != sorted(t1.blast_radius):
        out.append(f"evict steps {sorted(steps)} != blast radius {sorted(t1.blast_radius)}")
    for n in said + scaled:
        for locale in ("en", "zh-CN"):
            text = sentence("notes", n.code, n.params, fmt="text", locale=locale, strict=True)
            if str(n.params["pod"]) not in text:
                out.append(f"{locale} note does not name {n.params['pod']}: {text}")
    broken = by_invariant(check(placed.planted.bundle, placed.view, d))
    out += [f"{name}: {details[:2]}" for name, details in broken.items()]
    return out


@SETTINGS
@given(cls=st.sampled_from(CLASSES), seed=SEEDS)
def test_tier1_predicts_every_planted_placement_on_generated_nodes(cls: str, seed: int) -> None:
    placed = _placed(cls, seed)
    assert _problems(placed) == [], f"{cls} seed {seed}"


def test_the_sweep_meets_every_role_evicted_and_every_answer_holds() -> None:
    """300 nodes, every class in turn: each role, and each kind of answer (lands, Pending
    for each reason, scales a pool up), is met evicted at least once, and no prediction or
    count is off."""
    met: Counter[str] = Counter()
    kinds: Counter[str | None] = Counter()
    problems: list[str] = []
    rng = random.Random(20261202)
    for i in range(300):
        placed = _placed(CLASSES[i % len(CLASSES)], rng.randrange(2**32))
        d = analyze(placed.planted.bundle, placed.view, now=AT)
        [t1] = [p for p in d.plans if p.tier == 1]
        met.update(placed.roles[k] for k in t1.blast_radius if k in placed.roles)
        kinds.update(placed.answers[k] for k in t1.blast_radius if k in placed.answers)
        problems += _problems(placed)
    assert problems == []
    assert set(met) == set(ROLES), met
    assert set(kinds) == {None, "affinity", "spread", "affinity_spread", "scales_up"}, kinds


@pytest.mark.parametrize("role", ROLES)
def test_a_doctored_answer_is_caught(role: str) -> None:
    """The check can fail: flip one evicted pod's planted answer and it is reported."""
    rng = random.Random(7)
    for _ in range(400):
        placed = _placed(rng.choice(CLASSES), rng.randrange(2**32))
        d = analyze(placed.planted.bundle, placed.view, now=AT)
        [t1] = [p for p in d.plans if p.tier == 1]
        hit = [k for k in t1.blast_radius if placed.roles.get(k) == role]
        if hit:
            wrong = "spread" if placed.answers[hit[0]] is None else None
            doctored = Placed(
                placed.planted, placed.view, placed.roles, {**placed.answers, hit[0]: wrong}
            )
            assert any(hit[0] in p for p in _problems(doctored))
            return
    pytest.fail(f"no generated node evicted a pod with role {role}")
