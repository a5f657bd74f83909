"""Blame follows the contract, told to both teams. Pure: no I/O.

A pod's memory request is its contract with the scheduler. When the node is short, what it
is short of is memory held above requests (pods without a request: all of it) and memory
outside pods; the kubelet evicts in that order too (above request first, then lower
priority, then the most above request). The verdict's ``contract_*`` params
(``bot.core.diagnosis.verdicts``) carry the split:

- the AI team hears what the node's biggest pods hold against their requests, in the
  kubelet's order (``ai.pods_against_requests``);
- the ops team hears what the scheduler could not see: memory above requests and outside
  pods, beside what it reserved (``ops.scheduler_unseen``).

Keys: ai.pods_against_requests, ops.scheduler_unseen.
"""

from __future__ import annotations

from bot.core.diagnosis.findings import Diagnosis, TalkingPoint
from bot.core.diagnosis.rules.context import fact
from bot.core.reporting.points.common import Params, point

PODS = "cgroup:kubepods"
MEMINFO = "procfs:/proc/meminfo"


def contract_points(d: Diagnosis) -> list[TalkingPoint]:
    v = d.verdict
    if "contract_rows" not in v.params:  # set on the shortage path only (node under pressure)
        return []
    p = v.params
    requests_src = f"k8s:node/{d.node}/pods"
    rows = int(p.get("contract_rows", 0))
    out: list[TalkingPoint] = []
    if rows:
        params: Params = {k: val for k, val in p.items() if k.startswith("contract_")}
        facts = [
            fact(
                f"pod.contract_{i}.held_bytes",
                f"{p[f'contract_{i}_subject']} held",
                p[f"contract_{i}_held_bytes"],
                "bytes",
                PODS,
            )
            for i in range(1, rows + 1)
        ] + [
            fact(
                f"pod.contract_{i}.request_bytes",
                f"{p[f'contract_{i}_subject']} memory request",
                p[f"contract_{i}_request_bytes"],
                "bytes",
                requests_src,
            )
            for i in range(1, rows + 1)
        ]
        out.append(point("ai_team", "ai.pods_against_requests", "neutral", facts, params))
    above, outside = p.get("contract_above_bytes", 0), p.get("contract_outside_bytes", 0)
    unseen = int(above) + int(outside)
    facts = [
        fact("pods.above_request_bytes", "held by pods above their requests", above, "bytes", PODS),
        fact("node.outside_pods_bytes", "held outside pods", outside, "bytes", MEMINFO),
        fact(
            "pods.within_request_bytes",
            "held by pods inside their requests",
            p.get("contract_within_bytes", 0),
            "bytes",
            PODS,
        ),
    ]
    out.append(
        point(
            "ops_team",
            "ops.scheduler_unseen",
            "neutral",
            facts,
            {
                "unseen_bytes": unseen,
                "above_bytes": above,
                "above_count": p.get("contract_above_count", 0),
                "no_request_bytes": p.get("contract_no_request_bytes", 0),
                "no_request_count": p.get("contract_no_request_count", 0),
                "outside_bytes": outside,
                "within_bytes": p.get("contract_within_bytes", 0),
                "shortage_bytes": v.shortage_bytes,
            },
        )
    )
    return out
