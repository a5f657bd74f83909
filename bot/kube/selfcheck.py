"""What ``gpunode doctor`` asks the cluster (sync; run in threads by the gateway), and the
comparison of the token's rules with what the bot needs (``permissions.API_CALLS``).

- ``rules_review``: a SelfSubjectRulesReview (authorization.k8s.io/v1) in a namespace: every
  rule the token holds there (the ClusterRoleBindings' and that namespace's RoleBindings').
- ``admission_policies``: the ValidatingAdmissionPolicies and their bindings.
- ``dry_run_job``: a server-side dry run (``dryRun=All``) of the collector Job, so admission
  (the policies, the image pin) answers as it would for a real diagnosis, and nothing runs.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, NamedTuple

from bot.kube.permissions import API_CALLS, ApiCall
from bot.kube.transport import Transport

#: the admission policies deploy/base installs, each with a binding of the same name
REQUIRED_POLICIES = (
    "gpunode-diagnostic-job",
    "gpunode-node-cordon",
    "gpunode-priority-class",
    "gpunode-controller-template",
    "gpunode-pod-resize",
)
#: grants every authenticated user holds (system:basic-user): not the bot's to give back
_EVERYONE = {
    ("authorization.k8s.io", "selfsubjectaccessreviews", "create"),
    ("authorization.k8s.io", "selfsubjectrulesreviews", "create"),
    ("authentication.k8s.io", "selfsubjectreviews", "create"),  # `auth whoami`, 1.28+
}
#: what leader election calls (bot.kube.leasing: read, create, replace the Lease), needed
#: only when ``leader.lease_name`` is set (the ha overlay grants them)
LEASE_CALLS: tuple[ApiCall, ...] = tuple(
    ApiCall("coordination.k8s.io", "leases", verb, "own_namespace")
    for verb in ("get", "create", "update")
)
#: a namespace whose rules are only the cluster-wide ones (no RoleBinding names the bot there)
CLUSTER_PROBE_NAMESPACE = "default"


class Grant(NamedTuple):
    """A right, as data (``doctor`` rows carry it; ``cli.txt.j2``'s ``_grant`` words it):
    ``api_group`` '' is the core group; ``scope`` ``cluster`` or ``own_namespace``."""

    api_group: str
    resource: str
    verb: str
    scope: str


def rules_review(t: Transport, namespace: str) -> Any:
    body = {
        "apiVersion": "authorization.k8s.io/v1",
        "kind": "SelfSubjectRulesReview",
        "spec": {"namespace": namespace},
    }
    return t.request("POST", "/apis/authorization.k8s.io/v1/selfsubjectrulesreviews", body=body)


def admission_policies(t: Transport) -> tuple[list[Any], list[Any]]:
    base = "/apis/admissionregistration.k8s.io/v1"
    return (
        t.list_all(f"{base}/validatingadmissionpolicies"),
        t.list_all(f"{base}/validatingadmissionpolicybindings"),
    )


def dry_run_job(t: Transport, job: dict[str, Any]) -> Any:
    ns = job["metadata"]["namespace"]
    return t.request(
        "POST", f"/apis/batch/v1/namespaces/{ns}/jobs", query=[("dryRun", "All")], body=job
    )


def _has(values: Iterable[str], wanted: str) -> bool:
    values = list(values)
    return "*" in values or wanted in values


def _covers(rule: dict[str, Any], call: ApiCall) -> bool:
    if rule.get("resourceNames"):
        return False  # a named rule never covers list/create, nor an unnamed object
    resources = list(rule.get("resources") or [])
    resource_ok = _has(resources, call.resource)
    if not resource_ok and "/" in call.resource:
        resource_ok = f"*/{call.resource.split('/', 1)[1]}" in resources
    return (
        _has(rule.get("verbs") or [], call.verb)
        and _has(rule.get("apiGroups") or [], call.api_group)
        and resource_ok
    )


def missing_grants(
    cluster_rules: list[dict[str, Any]],
    own_rules: list[dict[str, Any]],
    calls: tuple[ApiCall, ...] = API_CALLS,
) -> list[ApiCall]:
    """The ``calls`` no rule covers (cluster-wide calls: by the cluster-wide rules alone)."""
    return [
        call
        for call in calls
        if not any(
            _covers(r, call)
            for r in (own_rules if call.scope == "own_namespace" else cluster_rules)
        )
    ]


def extra_grants(
    cluster_rules: list[dict[str, Any]],
    own_rules: list[dict[str, Any]],
    also_needed: tuple[ApiCall, ...] = (),
    calls: tuple[ApiCall, ...] = API_CALLS,
) -> list[Grant]:
    """Each (group, resource, verb) a rule grants that no call needs, in that scope (a
    wildcard is named as ``*``); cluster-wide rights the bot needs only in its namespace count
    as extra too."""
    calls = (*calls, *also_needed)
    needed = {(c.api_group, c.resource, c.verb, c.scope) for c in calls}
    needed_anywhere = {(c.api_group, c.resource, c.verb) for c in calls}
    extra: dict[Grant, None] = {}
    cluster_keys = set()
    for scope, rules in (("cluster", cluster_rules), ("own_namespace", own_rules)):
        for rule in rules:
            if rule.get("resourceNames"):
                continue
            for group in rule.get("apiGroups") or []:
                for resource in rule.get("resources") or []:
                    for verb in rule.get("verbs") or []:
                        key = (group, resource, verb)
                        if key in _EVERYONE:
                            continue
                        if scope == "own_namespace" and key in cluster_keys:
                            continue  # the cluster-wide grant, seen again in the namespace
                        if scope == "cluster":
                            cluster_keys.add(key)
                        if (*key, scope) in needed:
                            continue
                        if scope == "own_namespace" and key in needed_anywhere:
                            continue
                        extra[Grant(group, resource, verb, scope)] = None
    return list(extra)
