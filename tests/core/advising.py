"""Whether a diagnosis' advice is right on a generated node: every expert invariant holds
(``gpunode_sandbox.advice_checks``) and the plan values fall in the ranges planted by
construction (``generating.Advice``). Used by ``test_advice_invariants.py`` and by
``bench/verdicts.py`` (``advice_right_rate``). Pure: no I/O.
"""

from __future__ import annotations

from fnmatch import fnmatchcase
from typing import TYPE_CHECKING

from bot.core.diagnosis.findings import Diagnosis
from bot.core.model.actions import ActionPlan
from gpunode_sandbox.advice_checks import check
from gpunode_sandbox.corpus import restart_count as corpus_restart_count

if TYPE_CHECKING:
    from tests.core.generating import Planted

GIB = 1024**3


def restart_count(plan: ActionPlan) -> int:
    """Pods the plan restarts across the cluster (as ``gpunode_sandbox.corpus`` counts them)."""
    return corpus_restart_count(plan)


def range_problems(planted: Planted, d: Diagnosis) -> list[str]:
    """The plan values outside the planted ranges (empty: all inside)."""
    a = planted.advice
    by_tier = {p.tier: p for p in d.plans}
    out: list[str] = []
    t1, t3 = by_tier.get(1), by_tier.get(3)
    if a.cap_container is not None:
        assert a.cap_min is not None and a.cap_max is not None
        v = t3.values if t3 is not None and t3.available else None
        if v is None:
            out.append(f"no tier-3 cap (expected {a.cap_container})")
        else:
            if v.container != a.cap_container:
                out.append(f"tier 3 caps {v.container}, not {a.cap_container}")
            if not a.cap_min <= v.memory_limit_bytes <= a.cap_max:
                out.append(
                    f"tier 3 cap {v.memory_limit_bytes / GIB:.1f} GiB not in "
                    f"[{a.cap_min / GIB:.1f}, {a.cap_max / GIB:.1f}] GiB"
                )
    if a.evict_max is not None and t1 is not None and t1.available:
        if a.evict_max == 0:
            out.append("tier 1 available on a node that is not short")
        elif len(t1.blast_radius) > a.evict_max:
            out.append(f"tier 1 evicts {len(t1.blast_radius)} pods (at most {a.evict_max})")
        missing = [k for k in a.evict_must if k not in t1.blast_radius]
        if a.evict_max and missing:
            out.append(f"tier 1 leaves the culprit {missing[0]}")
    rolled = t3 is not None and t3.available and a.restarts_total is not None
    if rolled and t3 is not None and restart_count(t3) != a.restarts_total:
        out.append(f"tier 3 restarts {restart_count(t3)} pods (all {a.restarts_total} roll)")
    if a.runbook_unit is not None:
        units = [s.unit for p in d.plans for s in p.runbook]
        if not any(u == a.runbook_unit or fnmatchcase(u, a.runbook_unit) for u in units):
            out.append(f"no runbook step for {a.runbook_unit} (steps for {units or 'nothing'})")
    return out


def advice_problems(planted: Planted, d: Diagnosis) -> list[str]:
    """Every broken invariant and every plan value out of its planted range."""
    return [str(v) for v in check(planted.bundle, planted.view, d)] + range_problems(planted, d)
