"""Change points: when a series started to grow, how fast, or when it jumped (pure)."""

from __future__ import annotations

import random

import pytest

from bot.core.diagnosis.changepoint import find_change

GI = 1024**3
H = 3600.0
MIN_RATE = 64 * 1024**2 / H


def _leak(base: float, start_h: float, rate: float):  # type: ignore[no-untyped-def]
    return lambda t: base * GI + max(0.0, t - start_h * H) * rate * GI / H


def _series(fn, noise: float, seed: int = 3, step: float = 60.0, hours: float = 6.0):  # type: ignore[no-untyped-def]
    rng = random.Random(seed)
    ts = [i * step for i in range(int(hours * H / step))]
    return ts, [fn(t) + rng.gauss(0, noise) for t in ts]


@pytest.mark.parametrize(
    ("name", "fn", "kind", "at", "rate_gib_h"),
    [
        ("slab leak from 2 h", _leak(2, 2, 4.1), "growth", 2 * H, 4.1),
        ("leak from 5 h", _leak(8, 5, 12.0), "growth", 5 * H, 12.0),
        ("creep all along", lambda t: 10 * GI + t * 0.5 * GI / H, "growth", 0.0, 0.5),
        ("spike at 3 h", lambda t: 5 * GI + (40 * GI if t >= 3 * H else 0), "step", 3 * H, 0.0),
        ("flat", lambda t: 60 * GI, "flat", 0.0, 0.0),
        ("drain from 1 h", lambda t: 60 * GI - max(0.0, t - H) * 3 * GI / H, "decline", H, -3.0),
    ],
)
def test_the_planted_regime_is_found(name, fn, kind, at, rate_gib_h) -> None:  # type: ignore[no-untyped-def]
    ts, vs = _series(fn, noise=0.03 * GI)
    change = find_change(ts, vs, min_rate=MIN_RATE)
    assert change is not None
    assert change.kind == kind, (name, change)
    assert abs(change.at_s - at) <= 120, (name, change)
    if kind in ("growth", "decline"):
        assert change.rate_after * H / GI == pytest.approx(rate_gib_h, rel=0.05)


def test_noise_alone_is_not_a_change() -> None:
    for seed in range(10):
        ts, vs = _series(lambda t: 30 * GI, noise=0.2 * GI, seed=seed)
        change = find_change(ts, vs, min_rate=MIN_RATE)
        assert change is not None and change.kind == "flat" and not change.breakpoint


@pytest.mark.parametrize("n", [0, 1, 7])
def test_too_few_points_give_no_answer(n: int) -> None:
    assert find_change([float(i) for i in range(n)], [1.0] * n, min_rate=MIN_RATE) is None


def test_mismatched_lengths_give_no_answer() -> None:
    assert find_change([0.0] * 10, [1.0] * 9, min_rate=MIN_RATE) is None
