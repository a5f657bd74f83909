"""An audit row of every detail code ``gpunode audit`` words (``bot.cli.audit``): the
details only the audit says, and the policy's denials and refusals with parameters, as
the services write them (a code, raw parameters, and the English detail kept beside)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from bot.store import AuditRecord

AT = datetime(2026, 3, 14, 9, 30, tzinfo=UTC)
#: (decision, code, params, English detail as stored)
_ROWS: list[tuple[str, str, dict[str, Any], str]] = [
    ("refused", "plan_not_current", {"plan": "P-7"}, "plan P-7"),
    ("refused", "approval_unknown", {"approval": "A-9"}, "A-9"),
    ("refused", "unknown_nodes", {"nodes": ["gpu-node-99"]}, "no GPU node named gpu-node-99"),
    (
        "refused",
        "alert_label_refused",
        {
            "node": "GPU-1",
            "error": "node names are lowercase: did you mean gpu-1?",
            "error_key": "node_name_case",
            "error_params": {"suggestion": "gpu-1"},
        },
        "GPU-1: node names are lowercase: did you mean gpu-1?",
    ),
    (
        "needs_approval",
        "approval_quorum",
        {"quorum": 2, "expires": "2026-03-14T09:40:00+00:00"},
        "quorum 2; expires 2026-03-14T09:40:00+00:00",
    ),
    ("expired", "approval_expired", {}, "nobody approved in time"),
    (
        "shared",
        "kit_shared",
        {"snapshot": 3, "files": ["INC-0001-kit.md", "values.yaml"]},
        "snapshot 3: INC-0001-kit.md, values.yaml",
    ),
    (
        "refused",
        "role_needed",
        {"what": "tier", "tier": 3, "roles": ["responder", "sre"]},
        "you need the responder or sre roles for tier 3; ask an admin to add you to it in the "
        "policy file",
    ),
    (
        "denied",
        "role_not_in_cluster",
        {"cluster": "prod-us", "scopes": [{"role": "sre", "clusters": ["prod-eu"]}]},
        "this is cluster prod-us and your role does not cover it (sre applies in prod-eu "
        "only); ask an admin for a role in prod-us",
    ),
    (
        "denied",
        "no_role_allows",
        {"what": "resolve", "cluster": "prod-us"},
        "no role in the policy file allows resolve in cluster prod-us; ask an admin to add one",
    ),
    ("refused", "action_already", {"state": "succeeded"}, "action_already state=succeeded"),
    (
        "refused",
        "plan_stale",
        {"reason": "node_cordoned", "node": "gpu-node-01"},
        "node gpu-node-01 was cordoned since the diagnosis (someone acted)",
    ),
]

AUDIT_SAMPLES = [
    AuditRecord(
        id=i,
        at=AT,
        actor="U0ALICE",
        action="tier3.request",
        channel="C0INCIDENT",
        decision=decision,
        detail=detail,
        detail_code=code,
        detail_params=params,
        cluster="prod-us",
    )
    for i, (decision, code, params, detail) in enumerate(_ROWS, start=1)
]
