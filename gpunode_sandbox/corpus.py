"""The labelled incident corpus: shipped scenarios with an ``expected:`` block, judged end to
end (the stand-in's diagnostic Job runs the real collector on the generated host tree, the
real gateway reads it over the official client, the real analysis decides).

``compare`` is pure: a Diagnosis against the expectation, a list of disagreements (empty:
agreed). ``judge`` runs one scenario through the real parts; ``judge_all`` all of them.
Expectations are the expert's reading of each scenario's numbers (see
``gpunode_sandbox.kubesim.expectations``); nothing here knows a scenario by name.

"Offered": tier 1 and tier 3 are offered as the fix when available and relieving the
shortage; tier 2 (a priority change, it frees nothing) when available.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from fnmatch import fnmatchcase
from typing import Literal

from bot.core.diagnosis.findings import Diagnosis
from bot.core.model.actions import ActionPlan
from bot.core.model.cluster import ClusterView
from bot.core.model.evidence import EvidenceBundle
from bot.core.model.thresholds import DEFAULT
from bot.core.reporting.analysis import analyze
from gpunode_sandbox.advice_checks import check
from gpunode_sandbox.kubesim.expectations import ByteRange, CountRange, Expected
from gpunode_sandbox.kubesim.quantities import to_bytes
from gpunode_sandbox.kubesim.scenarios import Scenario, list_scenarios, load_scenario

GIB = 2**30
TIERS: tuple[Literal[1, 2, 3], ...] = (1, 2, 3)


@dataclass(frozen=True)
class Outcome:
    """One scenario's verdict and advice against its label."""

    scenario: str
    expected: str
    got: str
    problems: list[str] = field(default_factory=list)
    diagnosis: Diagnosis | None = None
    advice_expected: str = ""
    advice_got: str = ""

    @property
    def ok(self) -> bool:
        return not self.problems


def corpus_names() -> list[str]:
    """Shipped scenarios that carry an ``expected:`` block."""
    return [n for n in list_scenarios() if load_scenario(n).expected is not None]


def offered(plan: ActionPlan) -> bool:
    if not plan.available:
        return False
    return plan.tier == 2 or plan.relieves


def gpu_uuids(bundle: EvidenceBundle) -> dict[int, str]:
    return {g.index: g.uuid for g in bundle.gpus}


def matches(pattern: str | None, value: str | None, gpus: dict[int, str]) -> bool:
    """``pattern``: None (anything), ``gpu:N`` (that GPU's uuid), exact text, or a glob."""
    if pattern is None:
        return True
    if value is None:
        return False
    if pattern.startswith("gpu:") and pattern[4:].isdecimal():
        return gpus.get(int(pattern[4:])) == value
    return value == pattern or fnmatchcase(value, pattern)


def _gib(b: int) -> str:
    return f"{b / GIB:.1f}Gi"


def _in_range(value: int, r: ByteRange) -> bool:
    low = to_bytes(r.min) if r.min is not None else None
    high = to_bytes(r.max) if r.max is not None else None
    return (low is None or value >= low) and (high is None or value <= high)


def _range_text(r: ByteRange) -> str:
    low = _gib(to_bytes(r.min)) if r.min is not None else ""
    high = _gib(to_bytes(r.max)) if r.max is not None else ""
    return f"[{low}..{high}]"


def _count_text(r: CountRange) -> str:
    if r.min == r.max:
        return str(r.min)
    return f"{'' if r.min is None else r.min}..{'' if r.max is None else r.max}"


def restart_count(plan: ActionPlan) -> int:
    """Pods the plan restarts across the cluster: the count its ``rolls_other_nodes`` note
    states (the workload's replicas, here and elsewhere), else its ``restarts`` and
    ``blast_radius`` (the pods here and, named, elsewhere)."""
    for note in plan.notes:
        count = note.params.get("count")
        if note.code == "rolls_other_nodes" and isinstance(count, int):
            return count
    return len(set(plan.restarts) | set(plan.blast_radius))


def describe_expected_advice(e: Expected) -> str:
    """``T3 cap main [16.0Gi..32.0Gi] restarts 3; T1 evicts ..2 +ns/pod-*; runbook kubelet*``."""
    parts = []
    for tier, x in sorted(e.tiers.items()):
        bits = []
        if x.cap is not None or x.container is not None:
            bits.append(f"cap {x.container or '*'} {_range_text(x.cap) if x.cap else ''}".rstrip())
        if x.evicts is not None:
            bits.append(f"evicts {_count_text(x.evicts)}")
        bits += [f"+{g}" for g in x.evicted]
        if x.restarts is not None:
            bits.append(f"restarts {_count_text(x.restarts)}")
        if bits:
            parts.append(f"T{tier} " + " ".join(bits))
    if e.runbook is not None:
        parts.append(f"runbook {e.runbook}")
    return "; ".join(parts) or "-"


def describe_got_advice(d: Diagnosis, e: Expected | None = None) -> str:
    """The same values read from the plans (for the tiers the label names, or every
    available one)."""
    parts = []
    want = e.tiers if e is not None else {}
    for plan in d.plans:
        x = want.get(plan.tier)
        if e is not None and x is None:
            continue
        bits = []
        if plan.tier == 3 and plan.values is not None and plan.available:
            bits.append(f"cap {plan.values.container} {_gib(plan.values.memory_limit_bytes)}")
        if plan.tier == 1 and plan.available:
            bits.append(f"evicts {len(plan.blast_radius)}")
        if plan.available and plan.tier != 1 and (x is None or x.restarts is not None):
            bits.append(f"restarts {restart_count(plan)}")
        if not plan.available:
            bits.append("n/a")
        parts.append(" ".join([f"T{plan.tier}", *bits]))
    units = sorted({s.unit for p in d.plans for s in p.runbook})
    if units:
        parts.append("runbook " + ",".join(units))
    return "; ".join(parts) or "-"


def _count_ok(value: int, r: CountRange) -> bool:
    return (r.min is None or value >= r.min) and (r.max is None or value <= r.max)


def compare_advice(e: Expected, d: Diagnosis, *, gpus: dict[int, str]) -> list[str]:
    """The plan values against the label's ranges (``cap``, ``container``, ``evicts``,
    ``evicted``, ``restarts``)."""
    problems: list[str] = []
    by_tier: dict[int, ActionPlan] = {p.tier: p for p in d.plans}
    for tier, x in sorted(e.tiers.items()):
        plan = by_tier.get(tier)
        if plan is None or not plan.available:
            named = x.cap or x.container or x.evicts or x.evicted or x.restarts
            if named and not (x.evicts is not None and x.evicts.max == 0):
                problems.append(f"tier {tier}: no available plan to hold its values")
            continue
        v = plan.values
        if x.cap is not None and (v is None or not _in_range(v.memory_limit_bytes, x.cap)):
            got = _gib(v.memory_limit_bytes) if v is not None else "none"
            problems.append(f"tier {tier} cap {got} not in {_range_text(x.cap)}")
        if x.container is not None and (v is None or not matches(x.container, v.container, gpus)):
            problems.append(
                f"tier {tier} caps container {v.container if v else 'none'} "
                f"(expected {x.container})"
            )
        if x.evicts is not None and not _count_ok(len(plan.blast_radius), x.evicts):
            problems.append(
                f"tier {tier} evicts {len(plan.blast_radius)} pods "
                f"(expected {_count_text(x.evicts)})"
            )
        for glob in x.evicted:
            if not any(matches(glob, k, gpus) for k in plan.blast_radius):
                problems.append(f"tier {tier} does not evict {glob}")
        if x.restarts is not None and not _count_ok(restart_count(plan), x.restarts):
            problems.append(
                f"tier {tier} restarts {restart_count(plan)} pods across the cluster "
                f"(expected {_count_text(x.restarts)})"
            )
    return problems


def _causes(causes: list[str]) -> str:
    """``+a,b×3``: contributing causes in first-seen order, repeats counted."""
    counts: dict[str, int] = {}
    for c in causes:
        counts[c] = counts.get(c, 0) + 1
    return "+" + ",".join(c if n == 1 else f"{c}×{n}" for c, n in counts.items())


def describe_expected(e: Expected) -> str:
    parts = [e.cause, e.subject or "-"]
    if e.contributing:
        parts.append(_causes([c.cause for c in e.contributing]))
    tiers = [
        f"{t}{'?' if x.offered is None else ''}"
        for t, x in sorted(e.tiers.items())
        if x.offered is not False
    ]
    parts.append("T" + ("".join(tiers) or "-"))
    return " ".join(parts)


def describe_got(d: Diagnosis) -> str:
    v = d.verdict
    parts = [v.cause, v.subject or "-"]
    if v.contributing:
        parts.append(_causes([c.cause for c in v.contributing]))
    tiers = sorted(p.tier for p in d.plans if offered(p))
    parts.append("T" + ("".join(str(t) for t in tiers) or "-"))
    return " ".join(parts)


def _consumer_pods(d: Diagnosis) -> set[str]:
    """The pod the verdict blames (its primary subject), when it blames a pod."""
    v = d.verdict
    pod_causes = {"host_memory_workload", "container_limit", "shmem"}
    if v.cause in pod_causes and v.subject and "/" in v.subject:
        return {v.subject}
    return set()


def invariants(d: Diagnosis) -> list[str]:
    """What holds for every scenario, label or not: tier 2 never protects a consumer."""
    problems = []
    for plan in d.plans:
        if plan.tier != 2 or not plan.available:
            continue
        touched = set(plan.restarts) | set(plan.blast_radius)
        for key in _consumer_pods(d):
            name = key.split("/", 1)[1]
            if key in touched or name in touched or any(name in t for t in touched):
                problems.append(f"tier 2 raises the priority of the consumer {key}")
    return problems


def compare(e: Expected, d: Diagnosis, *, gpus: dict[int, str]) -> list[str]:
    """Disagreements between the label and the diagnosis (empty: they agree)."""
    v = d.verdict
    problems: list[str] = []
    if v.cause != e.cause:
        problems.append(f"cause {v.cause} (expected {e.cause})")
    if not matches(e.subject, v.subject, gpus):
        problems.append(f"subject {v.subject} (expected {e.subject})")
    for c in e.contributing:
        if not any(
            x.cause == c.cause and matches(c.subject, x.subject, gpus) for x in v.contributing
        ):
            problems.append(f"contributing {c.cause} {c.subject or ''} not named".rstrip())
    if e.shortage is not None and not _in_range(v.shortage_bytes, e.shortage):
        problems.append(f"shortage {_gib(v.shortage_bytes)} not in {_range_text(e.shortage)}")
    by_tier = {p.tier: p for p in d.plans}
    for tier in TIERS:
        want = e.tiers.get(tier)
        plan = by_tier.get(tier)
        got = plan is not None and offered(plan)
        if want is None or want.offered is None:
            if want is None and got:
                problems.append(f"tier {tier} offered (expected not)")
        elif want.offered != got:
            problems.append(
                f"tier {tier} {'offered' if got else 'not offered'} (expected "
                f"{'offered' if want.offered else 'not offered'})"
            )
        if want is not None and plan is not None:
            if want.relief is not None and not _in_range(plan.relief_bytes, want.relief):
                problems.append(
                    f"tier {tier} relief {_gib(plan.relief_bytes)} not in "
                    f"{_range_text(want.relief)}"
                )
            if want.target is not None and not matches(want.target, plan.target, gpus):
                problems.append(f"tier {tier} target {plan.target} (expected {want.target})")
        elif want is not None and want.offered and plan is None:
            problems.append(f"tier {tier}: no plan")
    if e.runbook is not None:
        units = [s.unit for p in d.plans for s in p.runbook]
        if not any(matches(e.runbook, u, gpus) for u in units):
            problems.append(f"no runbook step for {e.runbook} (steps for {units or 'nothing'})")
    return problems + compare_advice(e, d, gpus=gpus) + invariants(d)


async def judge(scenario: Scenario, *, url: str) -> tuple[Diagnosis, EvidenceBundle]:
    """Diagnose the expected node of ``scenario`` served by a running stand-in at ``url``."""
    d, bundle, _ = await judge_with_view(scenario, url=url)
    return d, bundle


async def judge_with_view(
    scenario: Scenario, *, url: str
) -> tuple[Diagnosis, EvidenceBundle, ClusterView]:
    """``judge``, and the cluster view the diagnosis was made from (the advice checks need
    it: which pods are where, what they request)."""
    from bot.config import KubeSettings
    from bot.kube.gateway import Gateway
    from gpunode_sandbox.kubesim.access import BOT_TOKEN

    assert scenario.expected is not None
    # the bot's own token: exactly the deployed permissions; a generous deadline, as the
    # stand-in's own (on two busy cores the real collector has taken over 20 s)
    settings = KubeSettings(
        mode="server", server=url, token=BOT_TOKEN, verify_tls=False, job_timeout_s=120
    )
    gw = Gateway.from_settings(settings)
    try:
        node = scenario.expected.node
        bundle = await gw.run_diagnostic(node)
        view = await gw.get_cluster_view(node)
    finally:
        gw.close()
    return analyze(bundle, view, thresholds=DEFAULT, now=datetime.now(UTC)), bundle, view


def outcome(
    scenario: Scenario, d: Diagnosis, bundle: EvidenceBundle, view: ClusterView | None = None
) -> Outcome:
    """The label compared; with the ``view``, the expert invariants too (``advice_checks``):
    each broken one is a problem ``advice <invariant>: <numbers>``."""
    assert scenario.expected is not None
    e = scenario.expected
    problems = compare(e, d, gpus=gpu_uuids(bundle))
    if view is not None:
        problems += [f"advice {v}" for v in check(bundle, view, d)]
    return Outcome(
        scenario=scenario.name,
        expected=describe_expected(e),
        got=describe_got(d),
        problems=problems,
        diagnosis=d,
        advice_expected=describe_expected_advice(e),
        advice_got=describe_got_advice(d, e),
    )


async def judge_all(names: list[str] | None = None) -> list[Outcome]:
    """Every labelled scenario through a fresh stand-in each (sequential: 2-core friendly)."""
    from gpunode_sandbox.kubesim import KubeSim

    outcomes = []
    for name in names if names is not None else corpus_names():
        scenario = load_scenario(name)
        sim = KubeSim(scenario)
        await sim.start()
        try:
            d, bundle, view = await judge_with_view(scenario, url=sim.url)
        finally:
            await sim.stop()
        outcomes.append(outcome(scenario, d, bundle, view))
    return outcomes


def table(outcomes: list[Outcome]) -> str:
    """``scenario | expected | got | advice expected | advice got | ok`` (Markdown), with the
    disagreements under it (labels, advice ranges and the expert invariants)."""
    lines = [
        "| scenario | expected | got | advice expected | advice got | ok |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for o in outcomes:
        lines.append(
            f"| {o.scenario} | {o.expected} | {o.got} | {o.advice_expected} | {o.advice_got} "
            f"| {'yes' if o.ok else 'NO'} |"
        )
    right = sum(o.ok for o in outcomes)
    lines.append("")
    lines.append(f"{right}/{len(outcomes)} agree")
    for o in outcomes:
        for p in o.problems:
            lines.append(f"- {o.scenario}: {p}")
    return "\n".join(lines)
