"""Evidence in, Diagnosis out: findings, ledger, verdict, plans, talking points. Pure.

``analyze`` never raises on partial evidence (``None`` fields, empty lists, no view): each
rule skips what it cannot judge, and the bundle's gaps are carried into
``Diagnosis.unverified`` and into talking points marked unverified. Time is an argument
(``now``), used only for the evidence's age.

Order: attribute (join bundle to pods, dict indexes) -> rules (``bot.core.diagnosis.rules``) ->
ledger (``bot.core.diagnosis.ledger``) -> verdict (``bot.core.diagnosis.verdicts``) -> plans (needs
a view) -> talking points. Findings are sorted by severity (critical first), then code and subject.
"""

from __future__ import annotations

from datetime import UTC, datetime

from bot.core.diagnosis.attribution import attribute
from bot.core.diagnosis.findings import DeviceClaim, Diagnosis, Finding
from bot.core.diagnosis.gpus import node_has_gpus
from bot.core.diagnosis.ledger import build_ledger
from bot.core.diagnosis.rules import ALL_RULES, Context
from bot.core.diagnosis.verdicts import decide
from bot.core.model.cluster import ClusterView
from bot.core.model.evidence import EvidenceBundle, Gap
from bot.core.model.thresholds import DEFAULT, Thresholds
from bot.core.remedies.planning import plan_all
from bot.core.remedies.relief import container_holdings
from bot.core.reporting.talking_points import build_talking_points

_SEVERITY_ORDER = {"critical": 0, "warning": 1, "info": 2, "ok": 3}


def _aware(moment: datetime) -> datetime:
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


def _node_name(bundle: EvidenceBundle, view: ClusterView | None) -> str:
    if view is not None:
        return view.node.name
    return bundle.node_name or bundle.hostname


def run_rules(ctx: Context, thresholds: Thresholds) -> list[Finding]:
    findings = [f for rule in ALL_RULES for f in rule(ctx, thresholds)]
    return sorted(findings, key=lambda f: (_SEVERITY_ORDER[f.severity], f.code, f.subject))


def _gaps(bundle: EvidenceBundle, view: ClusterView | None) -> list[Gap]:
    """The bundle's gaps, less NVML's on a node the API says has no GPUs: there is no GPU
    memory to verify there (without a view, a missing driver could hide GPUs: kept)."""
    if view is not None and not node_has_gpus(bundle, view):
        return [g for g in bundle.gaps if not g.source.startswith("nvml")]
    return list(bundle.gaps)


def analyze(
    bundle: EvidenceBundle,
    view: ClusterView | None,
    *,
    thresholds: Thresholds = DEFAULT,
    now: datetime,
) -> Diagnosis:
    node = _node_name(bundle, view)
    attr = attribute(bundle, view)
    ctx = Context(bundle=bundle, view=view, attr=attr, node=node, now=now)
    findings = run_rules(ctx, thresholds)
    ledger = build_ledger(bundle, attr)
    verdict = decide(ctx, findings, thresholds)
    # A node clock a little ahead of the bot's gives a negative difference; the evidence is
    # then as fresh as it can be, not "-3 s old".
    age = max(0.0, (_aware(now) - _aware(bundle.collected_at)).total_seconds())
    diagnosis = Diagnosis(
        node=node,
        collected_at=bundle.collected_at,
        evidence_age_s=age,
        verdict=verdict,
        findings=findings,
        ledger=ledger,
        unverified=_gaps(bundle, view),
        dra_devices=[]
        if view is None
        else [
            DeviceClaim(pod=p.key, **d.model_dump())
            for p in sorted(view.pods, key=lambda p: p.key)
            for d in p.gpu_devices
        ],
    )
    if view is not None:
        plans = plan_all(view, diagnosis, thresholds=thresholds, holdings=container_holdings(attr))
        diagnosis = diagnosis.model_copy(update={"plans": plans})
    points = build_talking_points(diagnosis, view, thresholds=thresholds)
    return diagnosis.model_copy(update={"talking_points": points})
