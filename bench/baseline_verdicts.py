"""FROZEN baseline for bench/verdicts.py: the fixed-precedence ``decide`` as it was before
verdicts came from attribution (commit 2214a22, bot/core/diagnosis/verdicts.py). Do not edit: the
bench reports the new verdicts against this one on the same generated nodes.

The original docstring follows.

The verdict: one cause, one subject, a confidence, from the findings.

Precedence (first match wins; the order is the contract, tested per fixture scenario):

1. ``kernel_slab`` (high/medium): SUnreclaim is critical AND larger than any pod's working
   set: the kernel, not a workload, holds the memory (and the kubelet cannot see it).
2. ``host_memory_workload`` (high when it is the node's biggest consumer): a non-GPU pod
   holds a large share of host RAM and is near its limit or the node is under pressure.
3. ``container_limit`` (high with OOM kills, else medium): a container at its own limit
   (cgroup OOM imminent) or OOM-killed, while the node as a whole may be fine.
4. ``kernel_slab`` (medium): SUnreclaim is high (warning) and the node is under pressure.
5. ``gpu_memory`` (high if host memory is fine, else medium): a GPU's memory is exhausted.
6. ``overcommit`` (medium): limits exceed allocatable and the node is under pressure.
7. ``inconclusive`` (low): the node is under pressure but no single cause stands out, or
   the evidence is too thin to judge (no meminfo, no cgroups).
8. ``overcommit`` (low): limits exceed allocatable, no pressure yet.
9. ``healthy``: nothing above (high with no warnings, else medium).
"""

from __future__ import annotations

from bot.core.diagnosis.findings import Finding, Verdict
from bot.core.diagnosis.rules.context import Context
from bot.core.diagnosis.rules.host import under_pressure
from bot.core.model.thresholds import Thresholds

_PRESSURE_CODES = frozenset({"SYSTEM_OOM_EVENTS", "MEMORY_PRESSURE_STALL", "MEMORY_AVAILABLE_LOW"})


def _first(findings: list[Finding], code: str, severity: str | None = None) -> list[Finding]:
    return [f for f in findings if f.code == code and (severity is None or f.severity == severity)]


def _num(f: Finding, key: str) -> float:
    value = f.params.get(key, 0)
    return float(value) if isinstance(value, int | float) else 0.0


def _verdict(cause: str, f: Finding | None, confidence: str, **extra: str | int | float) -> Verdict:
    params: dict[str, str | int | float] = dict(f.params) if f is not None else {}
    params.update(extra)
    return Verdict.model_validate(
        {
            "cause": cause,
            "subject": f.subject if f is not None else params.get("subject"),
            "confidence": confidence,
            "facts": list(f.facts) if f is not None else [],
            "params": params,
        }
    )


def decide(ctx: Context, findings: list[Finding], t: Thresholds) -> Verdict:
    pressured = under_pressure(ctx, t) or any(f.code in _PRESSURE_CODES for f in findings)
    ranked = ctx.ranked_pods()
    largest_pod = (ranked[0].working_set_bytes or 0) if ranked else 0

    slab = _first(findings, "KERNEL_SLAB_UNRECLAIMABLE_HIGH")
    if (
        slab
        and slab[0].severity == "critical"
        and _num(slab[0], "s_unreclaim_bytes") >= largest_pod
    ):
        return _verdict("kernel_slab", slab[0], "high" if pressured else "medium")

    hosts = _first(findings, "HOST_MEM_NON_GPU_WORKLOAD", "critical")
    if hosts:
        top = max(hosts, key=lambda f: (_num(f, "working_set_bytes"), f.subject))
        confident = _num(top, "biggest_consumer") == 1
        return _verdict("host_memory_workload", top, "high" if confident else "medium")

    near = _first(findings, "CONTAINER_NEAR_LIMIT", "critical")
    ooms = _first(findings, "CONTAINER_OOM_KILLED")
    if near:
        top = max(near, key=lambda f: (_num(f, "percent"), f.subject))
        killed = any(o.subject == top.subject for o in ooms)
        return _verdict("container_limit", top, "high" if killed else "medium")
    if ooms:
        return _verdict("container_limit", ooms[0], "medium")

    if slab and pressured:
        return _verdict("kernel_slab", slab[0], "medium")

    gpus = _first(findings, "GPU_MEMORY_EXHAUSTED")
    if gpus:
        top = max(gpus, key=lambda f: (_num(f, "percent"), f.subject))
        return _verdict(
            "gpu_memory", top, "medium" if pressured else "high", exhausted_gpus=len(gpus)
        )

    over = _first(findings, "LIMITS_OVERCOMMITTED", "critical")
    if over and pressured:
        return _verdict("overcommit", over[0], "medium")
    if pressured:
        return _verdict("inconclusive", None, "low", subject=ctx.node)
    if ctx.bundle.meminfo is None and ctx.bundle.free is None and not ctx.bundle.containers:
        return _verdict("inconclusive", None, "low", subject=ctx.node, reason="no_memory_evidence")
    if over:
        return _verdict("overcommit", over[0], "low")
    warned = any(f.severity in ("critical", "warning") for f in findings)
    return _verdict("healthy", None, "medium" if warned else "high", subject=ctx.node)
