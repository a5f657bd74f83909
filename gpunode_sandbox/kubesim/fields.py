"""Which field selectors each resource supports, as the API server's field label conversions
declare them. Anything else is a 400 ``field label not supported: <field>``, so a client that
relies on an unsupported selector fails against the stand-in as it would against a cluster.
"""

from __future__ import annotations

from gpunode_sandbox.kubesim.resources import Resource
from gpunode_sandbox.kubesim.selectors import field_terms
from gpunode_sandbox.kubesim.statuses import ApiError

#: plural -> fields beyond metadata.name (and metadata.namespace for namespaced resources)
SUPPORTED: dict[str, frozenset[str]] = {
    "pods": frozenset(
        {
            "spec.nodeName",
            "spec.restartPolicy",
            "spec.schedulerName",
            "spec.serviceAccountName",
            "spec.hostNetwork",
            "status.phase",
            "status.podIP",
            "status.podIPs",
            "status.nominatedNodeName",
        }
    ),
    "nodes": frozenset({"spec.unschedulable"}),
    "events": frozenset(
        {
            "involvedObject.kind",
            "involvedObject.namespace",
            "involvedObject.name",
            "involvedObject.uid",
            "involvedObject.apiVersion",
            "involvedObject.resourceVersion",
            "involvedObject.fieldPath",
            "reason",
            "reportingComponent",
            "source",
            "type",
        }
    ),
    "namespaces": frozenset({"status.phase"}),
    "replicasets": frozenset({"status.replicas"}),
    "jobs": frozenset({"status.successful"}),
    # resource.k8s.io's ResourceSlice field label conversions
    "resourceslices": frozenset({"spec.nodeName", "spec.driver"}),
}


def check_field_selector(res: Resource, text: str | None) -> None:
    """Raise the API server's 400 for a field the resource cannot be selected by."""
    allowed = {"metadata.name"} | ({"metadata.namespace"} if res.namespaced else set())
    allowed |= SUPPORTED.get(res.plural, frozenset())
    for field in field_terms(text):
        if field not in allowed:
            raise ApiError(400, f"field label not supported: {field}")
