"""Generated nodes with one planted culprit: the verdict names it (cause and subject).

The generator (``generating.py``) plants one culprit of each class over random background
load; hypothesis draws the randomness. ``bench/verdicts.py`` reports the right rate over 500
such nodes against the old fixed-precedence verdict.
"""

from __future__ import annotations

import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bot.core.reporting.analysis import analyze
from tests.core.generating import AT, CLASSES, HOST_CLASSES, NODE, plant

#: hypothesis draws the generator's seed (a drawn ``random.Random`` makes huge base examples:
#: a node has hundreds of random choices)
SEEDS = st.integers(min_value=0, max_value=2**32 - 1)
SETTINGS = settings(
    max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True
)


#: classes the verdict gets wrong on the code before blame followed the contract (strict: the mark
#: goes
#: when the fix lands)
WRONG_BEFORE_FIX: dict[str, str] = {}


def _cls(name: str) -> object:
    reason = WRONG_BEFORE_FIX.get(name)
    marks = [pytest.mark.xfail(reason=reason, strict=True)] if reason else []
    return pytest.param(name, id=name, marks=marks)


@pytest.mark.parametrize("cls", [_cls(c) for c in CLASSES])
@SETTINGS
@given(seed=SEEDS)
def test_the_verdict_names_the_planted_culprit(cls: str, seed: int) -> None:
    planted = plant(cls, random.Random(seed))
    d = analyze(planted.bundle, planted.view, now=AT)
    assert (d.verdict.cause, d.verdict.subject) == (planted.cause, planted.subject), (
        d.verdict.cause,
        d.verdict.subject,
        d.verdict.contributing,
    )


@pytest.mark.parametrize("cls", HOST_CLASSES)
@SETTINGS
@given(seed=SEEDS)
def test_a_short_node_states_its_shortage_and_the_culprits_share(cls: str, seed: int) -> None:
    planted = plant(cls, random.Random(seed))
    v = analyze(planted.bundle, planted.view, now=AT).verdict
    assert v.shortage_bytes > 0
    assert v.share >= 0.11 and v.margin > 0  # the generator plants 12-60% of RAM
    assert all(c.share <= v.share for c in v.contributing if c.cause == v.cause)


@pytest.mark.parametrize("cls", CLASSES)
def test_generated_meminfo_adds_up_to_memtotal(cls: str) -> None:
    planted = plant(cls, random.Random(7))
    mi = planted.bundle.meminfo
    assert mi is not None
    parts = (
        mi.mem_free_bytes
        + mi.buffers_bytes
        + mi.cached_bytes
        + (mi.anon_pages_bytes or 0)
        + (mi.slab_bytes or 0)
        + (mi.page_tables_bytes or 0)
        + (mi.kernel_stack_bytes or 0)
        + (mi.percpu_bytes or 0)
        + (mi.vmalloc_used_bytes or 0)
        + (mi.hugetlb_bytes or 0)
    )
    assert parts == mi.mem_total_bytes


def test_a_node_that_only_looks_full_to_free_is_healthy_with_the_reason() -> None:
    rng = random.Random(11)
    planted = plant("healthy", rng)
    v = analyze(planted.bundle, planted.view, now=AT).verdict
    mi = planted.bundle.meminfo
    assert mi is not None and mi.mem_free_bytes < 0.1 * mi.mem_total_bytes
    assert (v.cause, v.subject, v.params["reason"]) == ("healthy", NODE, "page_cache_reclaimable")


def test_an_unknown_class_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown class"):
        plant("volcano", random.Random(1))
