"""One ops-team point per available remedy plan (tier 1 drain, tier 2 priority class, tier 3
caps), so the thread says what gpunode can do before anyone asks. Pure: no I/O.

Keys: ops.tier1_available, ops.tier2_available, ops.tier3_available. A node not at risk gets
no tier (``bot.core.remedies.planning.node_at_risk``), so no tier point: the plans say "nothing to
do" and why (warning ``node_not_at_risk``).

Tier 1 says how many pods it evicts (the fewest, in the kubelet's order, that cover the
shortage), how many evictable pods it leaves alone as not needed, and how many are protected
(of them, how many a PodDisruptionBudget pins: their eviction would be refused now).
Tier 3 says the caps per pod of the container that holds the memory, how many of the owner's
pods on the node take them, and how many replicas roll on other nodes.
"""

from __future__ import annotations

from bot.core.diagnosis.findings import Diagnosis, TalkingPoint
from bot.core.diagnosis.rules.context import fact
from bot.core.reporting.points.common import Params, point


def tier_points(d: Diagnosis) -> list[TalkingPoint]:
    out: list[TalkingPoint] = []
    src = f"k8s:node/{d.node}/pods"
    for plan in d.plans:
        if not plan.available:
            continue
        if plan.tier == 1:
            left = sum(1 for p in plan.protected if p.reason == "not_needed")
            pinned = sum(1 for p in plan.protected if p.refusal is not None)
            guarded = len(plan.protected) - left
            facts = [
                fact("plan.evictions", "pods to evict", len(plan.blast_radius), "count", src),
                fact("plan.protected", "pods protected", guarded, "count", src),
            ]
            params: Params = {
                "plan_id": plan.plan_id,
                "evictions": len(plan.blast_radius),
                "protected": guarded,
                "left_alone": left,
                "pinned": pinned,
                "already_cordoned": int("already_cordoned" in plan.warnings),
            }
        elif plan.tier == 2:
            facts = [fact("plan.restarts", "pods that restart", len(plan.restarts), "count", src)]
            cls = next((s.name for s in plan.steps if s.verb == "ensure_priority_class"), "")
            params = {
                "plan_id": plan.plan_id,
                "priority_class": cls,
                "restarts": len(plan.restarts),
            }
        else:
            if plan.values is None:
                continue
            facts = list(d.verdict.facts)
            spread = next((n for n in plan.notes if n.code == "rolls_other_nodes"), None)
            elsewhere = spread.params.get("elsewhere") if spread is not None else 0
            params = {
                "plan_id": plan.plan_id,
                "target": plan.target or "",
                "container": plan.values.container,
                "memory_limit": plan.values.memory_limit,
                "memory_request": plan.values.memory_request,
                "below_working_set": int(plan.values.below_working_set),
                "pods_here": len(plan.restarts) or 1,
                "pods_elsewhere": elsewhere if isinstance(elsewhere, int) else 0,
                "omp_num_threads": plan.values.omp_num_threads or 0,
            }
        params.update(
            relief_bytes=plan.relief_bytes,
            shortage_bytes=plan.shortage_bytes,
            relieves=int(plan.relieves),
        )
        if facts:
            out.append(
                point("ops_team", f"ops.tier{plan.tier}_available", "neutral", facts, params)
            )
    return out
