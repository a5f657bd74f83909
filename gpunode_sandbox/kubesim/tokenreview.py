"""TokenReview (authentication.k8s.io/v1), as kube-apiserver answers it.

Mirrors pkg/registry/authentication/tokenreview/storage.go: cluster-scoped, create only
(RBAC ``create tokenreviews`` for the caller, checked before this runs); an empty
``spec.token`` is a 400 ("token is required for TokenReview in authentication"); the
audiences asked for default to the API server's own; the review answers 201 with the object
sent, its ``status`` filled in: ``authenticated`` and ``user`` (username, uid, groups, extra)
and ``audiences`` (those of the token among the ones asked for) when the token is good,
otherwise no ``authenticated`` (false is omitted), an empty ``user`` and the authenticator's
``error``. A token is never a reason for a 401 here: a bad one is a review that says so.
"""

from __future__ import annotations

import copy
from typing import Any

from gpunode_sandbox.kubesim.access import Tokens
from gpunode_sandbox.kubesim.statuses import ApiError

Obj = dict[str, Any]


def token_review(tokens: Tokens, body: Any) -> Obj:
    """The answered TokenReview for the posted ``body``."""
    if not isinstance(body, dict) or body.get("kind") not in (None, "TokenReview"):
        raise ApiError(400, f"not a TokenReview: {str(body)[:200]}")
    spec = body.get("spec")
    if not isinstance(spec, dict):
        spec = {}
    token = spec.get("token")
    if not isinstance(token, str) or not token:
        raise ApiError(400, "token is required for TokenReview in authentication")
    audiences = spec.get("audiences") or []
    if not isinstance(audiences, list) or not all(isinstance(a, str) for a in audiences):
        raise ApiError(400, "spec.audiences must be a list of strings")
    out = copy.deepcopy(body)
    out.setdefault("apiVersion", "authentication.k8s.io/v1")
    out.setdefault("kind", "TokenReview")
    out.setdefault("metadata", {"creationTimestamp": None})
    try:
        user, good = tokens.review(token, tuple(audiences))
    except ApiError as refused:
        out["status"] = {"user": {}, "error": refused.message}
        return out
    info: Obj = {"username": user.username, "groups": list(user.groups)}
    if user.uid:
        info["uid"] = user.uid
    if user.extra:
        info["extra"] = {k: list(v) for k, v in user.extra}
    out["status"] = {"authenticated": True, "user": info, "audiences": list(good)}
    return out
