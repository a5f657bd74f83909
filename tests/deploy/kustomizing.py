"""The kustomize renderer the tests use: the one in gpunode_sandbox/kubesim/kustomize.py (the
Kubernetes stand-in loads deploy/base with it too), plus ``grants`` for the RBAC tables."""

from __future__ import annotations

from typing import Any

from gpunode_sandbox.kubesim.kustomize import (
    CLUSTER_SCOPED,
    KustomizeError,
    find,
    render,
    strategic_merge,
)

__all__ = ["CLUSTER_SCOPED", "KustomizeError", "find", "grants", "render", "strategic_merge"]


def grants(role: dict[str, Any]) -> dict[tuple[str, str], set[str]]:
    """Flatten a Role/ClusterRole into (apiGroup, resource) -> verbs."""
    out: dict[tuple[str, str], set[str]] = {}
    for rule in role["rules"]:
        assert not rule.get("resourceNames"), "resourceNames are not expected here"
        assert not rule.get("nonResourceURLs"), "no non-resource URLs"
        for group in rule["apiGroups"]:
            for resource in rule["resources"]:
                out.setdefault((group, resource), set()).update(rule["verbs"])
    return out
