"""Object-name validation, with apimachinery's messages (``validation.IsDNS1123Subdomain``…).

Which rule a kind's name follows is the API server's: most objects are DNS-1123 subdomains,
namespaces DNS-1123 labels, RBAC objects path segments (``system:basic-user`` is a valid
ClusterRole name). Pure: no store, no clock.
"""

from __future__ import annotations

import re

from gpunode_sandbox.kubesim.statuses import invalid

_LABEL = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_SUBDOMAIN = _LABEL + r"(\." + _LABEL + ")*"
_LABEL_RE = re.compile(f"^{_LABEL}$")
_SUBDOMAIN_RE = re.compile(f"^{_SUBDOMAIN}$")

LABEL_MESSAGE = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', "
    "and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', "
    f"regex used for validation is '{_LABEL}')"
)
SUBDOMAIN_MESSAGE = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' "
    "or '.', and must start and end with an alphanumeric character (e.g. 'example.com', "
    f"regex used for validation is '{_SUBDOMAIN}')"
)

#: kinds whose name is a DNS-1123 label (``ValidateNamespaceName``)
LABEL_KINDS = frozenset({"Namespace"})
#: kinds whose name only has to be a valid path segment (``path.ValidatePathSegmentName``)
PATH_SEGMENT_KINDS = frozenset({"Role", "RoleBinding", "ClusterRole", "ClusterRoleBinding"})


def name_errors(kind: str, name: str) -> list[str]:
    """What is wrong with ``name`` for ``kind``, in the API server's words (empty: valid)."""
    if kind in PATH_SEGMENT_KINDS:
        if name in (".", ".."):
            return [f"may not be '{name}'"]
        return [f"may not contain '{c}'" for c in ("/", "%") if c in name]
    errors: list[str] = []
    if kind in LABEL_KINDS:
        if len(name) > 63:
            errors.append("must be no more than 63 characters")
        if not _LABEL_RE.match(name):
            errors.append(LABEL_MESSAGE)
        return errors
    if len(name) > 253:
        errors.append("must be no more than 253 characters")
    if not _SUBDOMAIN_RE.match(name):
        errors.append(SUBDOMAIN_MESSAGE)
    return errors


def check_name(kind: str, name: str, *, group: str = "") -> None:
    """Raise the API server's 422 when ``name`` is not a valid ``kind`` name."""
    errors = name_errors(kind, name)
    if not errors:
        return
    causes = [
        {
            "reason": "FieldValueInvalid",
            "field": "metadata.name",
            "message": f'Invalid value: "{name}": {e}',
        }
        for e in errors
    ]
    raise invalid(kind, name, causes, group=group)
