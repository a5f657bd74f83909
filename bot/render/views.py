"""Pure view models built from a Diagnosis: what every format shows, before any wording.

Each renderer (Block Kit, Markdown, terminal) walks the same ``DiagnosisView`` so the three
formats cannot disagree on a number. Strings here are raw (unescaped); escaping belongs to
the renderer of each format. No Jinja, no I/O.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from bot.core.diagnosis.findings import (
    DeviceClaim,
    Diagnosis,
    Fact,
    Finding,
    LedgerCategory,
    TalkingPoint,
    Verdict,
)
from bot.core.model.actions import ActionPlan
from bot.core.model.evidence import EvidenceBundle, Gap
from bot.core.remedies.recommendations import recommended_plan

SEVERITY_ORDER = {"critical": 0, "warning": 1, "info": 2, "ok": 3}
BAR_WIDTH = 40

#: ledger category -> display group; groups are drawn in this order
GROUPS: dict[LedgerCategory, str] = {
    "pod": "pods",
    "system": "system",
    "kernel_slab_unreclaimable": "kernel",
    "kernel_slab_reclaimable": "kernel",
    "kernel_page_tables": "kernel",
    "kernel_stacks": "kernel",
    "kernel_other": "kernel",
    "page_cache": "page_cache",
    "unattributed": "unattributed",
    "free": "free",
}
GROUP_ORDER = ("pods", "system", "kernel", "page_cache", "unattributed", "free")
GLYPHS = {
    "pods": "█",
    "system": "▓",
    "kernel": "▒",
    "page_cache": "░",
    "unattributed": "▚",
    "free": "·",
}


@dataclass(frozen=True)
class Segment:
    group: str
    glyph: str
    bytes: int
    percent: float
    cells: int


@dataclass(frozen=True)
class LedgerView:
    total_bytes: int
    used_bytes: int
    free_bytes: int
    residual_bytes: int
    segments: list[Segment]
    bar: str


@dataclass(frozen=True)
class AmountLine:
    """A pod, kernel or system line of the ledger."""

    label: str
    bytes: int
    percent: float
    source: str
    pod_key: str | None = None


@dataclass(frozen=True)
class GpuLine:
    index: int
    name: str
    uuid: str
    used_bytes: int
    total_bytes: int
    percent: float
    processes: int


@dataclass(frozen=True)
class GpuGroup:
    """Consecutive GPUs that read the same (model, used, total, processes): one line,
    "GPU 0–7: 64.0/80.0 GiB each (80%)". ``first == last`` for a GPU that differs."""

    first: int
    last: int
    name: str
    used_bytes: int
    total_bytes: int
    percent: float
    processes: int

    @property
    def count(self) -> int:
        return self.last - self.first + 1


def gpu_groups(gpus: list[GpuLine]) -> list[GpuGroup]:
    """``gpus`` (by index) with runs of identical consecutive devices collapsed."""
    out: list[GpuGroup] = []
    for g in gpus:
        same = (g.name, g.used_bytes, g.total_bytes, g.processes)
        prev = out[-1] if out else None
        if (
            prev is not None
            and prev.last + 1 == g.index
            and (prev.name, prev.used_bytes, prev.total_bytes, prev.processes) == same
        ):
            out[-1] = GpuGroup(
                prev.first, g.index, g.name, g.used_bytes, g.total_bytes, g.percent, g.processes
            )
        else:
            out.append(
                GpuGroup(
                    g.index, g.index, g.name, g.used_bytes, g.total_bytes, g.percent, g.processes
                )
            )
    return out


#: the fact that decides a point when it is not the point's first one (the GPU points list
#: the allocation counts first, but what answers "is GPU memory the problem" is the fullest
#: device)
DECISIVE_FACT = {
    "ai.gpu_memory_not_cause": "gpu.max_memory_used_bytes",
    "ops.gpu_not_cause": "gpu.max_memory_used_bytes",
}


def decisive_fact(tp: TalkingPoint) -> Fact | None:
    """The one number a point rests on (None: a point without facts, i.e. unverified)."""
    wanted = DECISIVE_FACT.get(tp.key)
    for f in tp.facts:
        if f.key == wanted:
            return f
    return tp.facts[0] if tp.facts else None


def _fact_id(f: Fact) -> tuple[str, str]:
    return f.key, str(f.value)


@dataclass(frozen=True)
class TeamLine:
    """What the brief message tells one team: the point that answers its usual position
    (the first one that supports or contradicts it, else its first point) and that point's
    decisive number, never a number the message already shows."""

    audience: str
    point: TalkingPoint
    fact: Fact


def team_lines(diagnosis: Diagnosis) -> list[TeamLine]:
    """One line per team with a verified point, AI/ML team first."""
    verdict_facts = {_fact_id(f) for f in diagnosis.verdict.facts}
    shown: set[tuple[str, str]] = set(verdict_facts)
    out: list[TeamLine] = []
    for audience in ("ai_team", "ops_team"):
        points = [
            p for p in diagnosis.talking_points if p.audience == audience and not p.unverified
        ]
        ranked = [p for p in points if p.stance != "neutral"] + [
            p for p in points if p.stance == "neutral"
        ]
        for p in ranked:
            fact = decisive_fact(p)
            if fact is not None and _fact_id(fact) not in shown:
                shown.add(_fact_id(fact))
                out.append(TeamLine(audience, p, fact))
                break
    return out


@dataclass(frozen=True)
class DiagnosisView:
    node: str
    collected_at: datetime
    evidence_age_s: float | None
    verdict: Verdict
    ledger: LedgerView
    pods: list[AmountLine]
    pods_hidden: int
    pods_hidden_bytes: int
    kernel: list[AmountLine]
    other: list[AmountLine]
    gpus: list[GpuLine]
    gpu_used_bytes: int | None
    gpu_total_bytes: int | None
    findings: list[Finding]
    ai_points: list[TalkingPoint]
    ops_points: list[TalkingPoint]
    plans: list[ActionPlan]
    unverified: list[Gap] = field(default_factory=list)
    gpu_groups: list[GpuGroup] = field(default_factory=list)
    #: the tier the brief message recommends (bot.core.remedies.recommendations), None: none
    recommended: ActionPlan | None = None
    #: the brief message's line per team
    teams: list[TeamLine] = field(default_factory=list)
    #: GPUs the node's pods hold through DRA ResourceClaims (driver, pool, device)
    dra: list[DeviceClaim] = field(default_factory=list)


def _pct(part: int, total: int) -> float:
    return 100.0 * part / total if total > 0 else 0.0


def bar_cells(sizes: list[int], width: int = BAR_WIDTH) -> list[int]:
    """Largest-remainder apportionment of ``width`` cells; a non-zero part gets >= 1 cell
    when there is room, so a small but present category stays visible."""
    total = sum(max(0, s) for s in sizes)
    if total <= 0:
        return [0 for _ in sizes]
    exact = [width * max(0, s) / total for s in sizes]
    cells = [int(e) for e in exact]
    order = sorted(range(len(sizes)), key=lambda i: exact[i] - cells[i], reverse=True)
    for i in order[: width - sum(cells)]:
        cells[i] += 1
    for i, s in enumerate(sizes):
        if s > 0 and cells[i] == 0:
            donor = max(range(len(cells)), key=lambda j: cells[j])
            if cells[donor] > 1:
                cells[donor] -= 1
                cells[i] = 1
    return cells


def ledger_view(diagnosis: Diagnosis, *, width: int = BAR_WIDTH) -> LedgerView:
    ledger = diagnosis.ledger
    sums: dict[str, int] = dict.fromkeys(GROUP_ORDER, 0)
    for e in ledger.entries:
        sums[GROUPS[e.category]] += max(0, e.bytes)
    groups = [g for g in GROUP_ORDER if sums[g] > 0]
    cells = bar_cells([sums[g] for g in groups], width)
    segments = [
        Segment(g, GLYPHS[g], sums[g], _pct(sums[g], ledger.total_bytes), c)
        for g, c in zip(groups, cells, strict=True)
    ]
    bar = "".join(s.glyph * s.cells for s in segments)
    free = sums["free"]
    return LedgerView(
        total_bytes=ledger.total_bytes,
        used_bytes=ledger.total_bytes - free,
        free_bytes=free,
        residual_bytes=ledger.residual_bytes,
        segments=segments,
        bar=bar,
    )


def _lines(diagnosis: Diagnosis, groups: set[str]) -> list[AmountLine]:
    total = diagnosis.ledger.total_bytes
    # a pod is named with its one figure (its working set, ``LedgerEntry.figure``) everywhere
    lines = [
        AmountLine(e.label, e.figure, _pct(e.figure, total), e.source, e.pod_key)
        for e in diagnosis.ledger.entries
        if GROUPS[e.category] in groups
    ]
    return sorted(lines, key=lambda x: (-x.bytes, x.label))


def gpu_lines(bundle: EvidenceBundle | None) -> list[GpuLine]:
    if bundle is None:
        return []
    counts: dict[int, int] = {}
    for p in bundle.gpu_processes:
        counts[p.gpu_index] = counts.get(p.gpu_index, 0) + 1
    return [
        GpuLine(
            g.index,
            g.name,
            g.uuid,
            g.memory_used_bytes,
            g.memory_total_bytes,
            _pct(g.memory_used_bytes, g.memory_total_bytes),
            counts.get(g.index, 0),
        )
        for g in sorted(bundle.gpus, key=lambda g: g.index)
    ]


def sorted_findings(findings: list[Finding]) -> list[Finding]:
    """Most severe first; stable within a severity (the analysis' order)."""
    return sorted(findings, key=lambda f: SEVERITY_ORDER.get(f.severity, 9))


def build_view(
    diagnosis: Diagnosis, bundle: EvidenceBundle | None = None, *, top_pods: int = 10
) -> DiagnosisView:
    """The view of one diagnosis. ``bundle`` (optional) adds the per-GPU lines."""
    pods = _lines(diagnosis, {"pods"})
    hidden = pods[top_pods:]
    gpus = gpu_lines(bundle)
    return DiagnosisView(
        node=diagnosis.node,
        collected_at=diagnosis.collected_at,
        evidence_age_s=diagnosis.evidence_age_s,
        verdict=diagnosis.verdict,
        ledger=ledger_view(diagnosis),
        pods=pods[:top_pods],
        pods_hidden=len(hidden),
        pods_hidden_bytes=sum(p.bytes for p in hidden),
        kernel=_lines(diagnosis, {"kernel"}),
        other=_lines(diagnosis, {"system", "page_cache", "unattributed"}),
        gpus=gpus,
        gpu_used_bytes=sum(g.used_bytes for g in gpus) if gpus else None,
        gpu_total_bytes=sum(g.total_bytes for g in gpus) if gpus else None,
        findings=sorted_findings(diagnosis.findings),
        ai_points=[p for p in diagnosis.talking_points if p.audience == "ai_team"],
        ops_points=[p for p in diagnosis.talking_points if p.audience == "ops_team"],
        plans=sorted(diagnosis.plans, key=lambda p: p.tier),
        unverified=list(diagnosis.unverified),
        gpu_groups=gpu_groups(gpus),
        recommended=recommended_plan(diagnosis.plans),
        teams=team_lines(diagnosis),
        dra=list(diagnosis.dra_devices),
    )
