"""What the transport reports after each API request: verb, resource, HTTP status.

``resource_of`` names the resource of a request path the way the API server's own metrics
do (``apiserver_request_total{resource, subresource}``), folded into one label value:
namespace and object names are dropped, so the label has a bounded set of values.
"""

from __future__ import annotations

from collections.abc import Callable

#: ``(HTTP verb, resource, HTTP status or None when no answer came)``
KubeObserver = Callable[[str, str, int | None], None]


def resource_of(path: str) -> str:
    """``/api/v1/namespaces/ns/pods/p/eviction`` -> ``pods/eviction``;
    ``/apis/batch/v1/namespaces/ns/jobs`` -> ``jobs``; ``/api/v1/nodes/n`` -> ``nodes``;
    ``/api/v1/namespaces/ns`` -> ``namespaces``; discovery (``/api``, ``/apis/g/v``,
    ``/version``, ``/openapi/...``) -> ``discovery``."""
    parts = [p for p in path.split("?", 1)[0].split("/") if p]
    if parts[:1] == ["api"] and len(parts) >= 2:
        rest = parts[2:]
    elif parts[:1] == ["apis"] and len(parts) >= 3:
        rest = parts[3:]
    else:
        return "discovery"
    if not rest:
        return "discovery"
    if rest[0] == "namespaces" and len(rest) >= 3:
        rest = rest[2:]
    resource = rest[0]
    if len(rest) >= 3:
        return f"{resource}/{rest[2]}"
    return resource
