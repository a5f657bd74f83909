"""Analysis rules, one module per family (host, kernel, gpu, pods, events).

Each rule is a small pure function ``rule(ctx, t) -> list[Finding]`` over a prepared
``Context``; ``ALL_RULES`` is the order in which ``bot.core.reporting.analysis`` runs them. A rule
that lacks its inputs (no meminfo, no view, no NVML) returns nothing: gaps are reported separately.

Finding codes are stable (templates and tests key on them); see each module's docstring.
"""

from __future__ import annotations

from collections.abc import Callable

from bot.core.diagnosis.findings import Finding
from bot.core.diagnosis.rules import events, gpu, host, kernel, kernel_log, pods
from bot.core.diagnosis.rules.context import Context
from bot.core.model.thresholds import Thresholds

Rule = Callable[[Context, Thresholds], list[Finding]]

ALL_RULES: tuple[Rule, ...] = (
    *host.RULES,
    *kernel.RULES,
    *pods.RULES,
    *gpu.RULES,
    *events.RULES,
    *kernel_log.RULES,
)

__all__ = ["ALL_RULES", "Context", "Rule"]
