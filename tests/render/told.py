"""Render outcomes the way the presenters do, for tests of the wording."""

from __future__ import annotations

from typing import Any

from bot.core.reporting.outcomes import Notice, Refused
from bot.render.blocks import Message
from bot.render.notices import render_told


def render_notice(key: str, /, locale: str = "en", **params: Any) -> Message:
    """``Notice(key, params)`` as the Slack presenter posts it in ``locale``."""
    return render_told(Notice(key=key, params=params), locale)


def render_refusal(code: str, /, locale: str = "en", **params: Any) -> Message:
    """``Refused(code, params)`` as the Slack presenter tells it in ``locale``."""
    return render_told(Refused(code=code, params=params), locale)


#: every refusal code with parameters as a use case gives them (hostile where a string is free)
REFUSAL_SAMPLES: dict[str, dict[str, Any]] = {
    "no_policy": {},
    "channel_not_enabled": {},
    "identity_unmapped": {},
    "role_not_in_cluster": {
        "cluster": "prod-us",
        "scopes": [{"role": "sre-eu", "clusters": ["prod-eu", "<!here>"]}],
    },
    "no_role_allows": {"what": "tier", "tier": 3, "cluster": "prod-us"},
    "role_needed": {"what": "undo", "roles": ["sre", "lead"]},
    "no_role_bound": {},
    "plan_not_current": {},
    "action_unknown": {},
    "approval_unknown": {},
    "not_the_requester": {"requester": "U0ALICE"},
    "action_already": {"state": "running"},
    "action_marked_meanwhile": {"state": "refused"},
    "action_will_not_run": {"state": "refused"},
    "nothing_to_cancel": {"state": "succeeded"},
    "only_requester_cancels": {},
    "cancel_too_late": {},
    "nothing_to_undo": {"state": "requested"},
    "nothing_undoable": {},
    "plan_stale": {"reason": "limits_changed", "target": "Deployment/ml/<!channel>", "limits": ""},
    "undo_conflict": {
        "reason": "resources_changed",
        "target": "Deployment/ml/<!channel>",
        "container": "train",
    },
    "undo_reread_failed": {
        "code": "cluster_unreachable",
        "message": "cluster prod-us could not be reached (timeout); check its API server",
        "error_key": "cluster_unreachable",
        "error_params": {"cluster": "prod-us", "reason": "timeout"},
    },
    "undo_in_progress": {},
    "vote_self_approval_rejected": {},
    "vote_not_eligible": {},
    "vote_expired": {},
    "vote_already_final": {},
    "vote_already_counted": {},
}

#: every reason a stale plan or an undo conflict can give (``bot.core.remedies.staleness``),
#: with parameters as the core gives them
REASON_SAMPLES: dict[str, dict[str, dict[str, Any]]] = {
    "plan_stale": {
        "no_evidence": {},
        "no_view": {},
        "node_gone": {"node": "gpu-node-07"},
        "evidence_old": {"age_min": 16, "limit_min": 15},
        "node_cordoned": {"node": "gpu-node-07"},
        "pod_gone": {"pod": "ml/train-0", "node": "gpu-node-07"},
        "pod_replaced": {"pod": "ml/train-0"},
        "target_gone": {"target": "Deployment/ml/train"},
        "priority_changed": {"target": "Deployment/ml/train", "now": ""},
        "container_gone": {"target": "Deployment/ml/train", "container": "preprocess"},
        "limits_changed": {"target": "Deployment/ml/train", "limits": "cpu=16, memory=80Gi"},
    },
    "undo_conflict": {
        "node_changed": {"node": "gpu-node-07", "cordoned": False},
        "target_gone": {"target": "Deployment/ml/train"},
        "priority_changed": {"target": "Deployment/ml/train"},
        "resources_changed": {"target": "Deployment/ml/train", "container": "train"},
    },
}
