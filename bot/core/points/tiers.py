"""One ops-team point per available remedy plan (tier 1 drain, tier 2 priority class, tier 3
caps), so the thread says what gpunode can do before anyone asks. Pure: no I/O.

Keys: ops.tier1_available, ops.tier2_available, ops.tier3_available.
"""

from __future__ import annotations

from bot.core.findings import Diagnosis, TalkingPoint
from bot.core.points.common import Params, point
from bot.core.rules.context import fact


def tier_points(d: Diagnosis) -> list[TalkingPoint]:
    out: list[TalkingPoint] = []
    src = f"k8s:node/{d.node}/pods"
    for plan in d.plans:
        if not plan.available:
            continue
        if plan.tier == 1:
            facts = [
                fact("plan.evictions", "pods to evict", len(plan.blast_radius), "count", src),
                fact("plan.protected", "pods protected", len(plan.protected), "count", src),
            ]
            params: Params = {
                "plan_id": plan.plan_id,
                "evictions": len(plan.blast_radius),
                "protected": len(plan.protected),
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
            params = {
                "plan_id": plan.plan_id,
                "target": plan.target or "",
                "memory_limit": plan.values.memory_limit,
                "memory_request": plan.values.memory_request,
                "below_working_set": int(plan.values.below_working_set),
                "memory_unchanged": int("memory_limit_unchanged" in plan.warnings),
                "cpu_limit": plan.values.cpu_limit or "",
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
