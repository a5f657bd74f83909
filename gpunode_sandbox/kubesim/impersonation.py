"""User impersonation, as kube-apiserver's ``WithImpersonation`` filter does it.

A request with ``Impersonate-User`` (and optionally ``Impersonate-Group`` lines,
``Impersonate-Uid``, ``Impersonate-Extra-<key>`` lines) is first authenticated as its
sender; then each requested part is authorized for the sender with verb ``impersonate``:

- the user: resource ``users`` (API group ""), name = the user name; a
  ``system:serviceaccount:NS:NAME`` user is resource ``serviceaccounts`` in namespace NS,
  name NAME (and, without groups, gets the ServiceAccount's groups);
- each group: resource ``groups``, name = the group;
- each extra value: resource ``userextras/<key>`` in API group ``authentication.k8s.io``,
  name = the value (the key is lower-cased and percent-decoded, as the header carries it);
- the uid: resource ``uids`` in ``authentication.k8s.io``.

The first refusal is the API server's 403 (``users "alice" is forbidden: User "..." cannot
impersonate resource "users" in API group "" at the cluster scope``). Groups, extras or a uid
without a user are refused ("requested ... without impersonating a user", a 500 as the
filter's InternalError answers). Then the request runs as the impersonated user, who is also
in ``system:authenticated`` (unless that or ``system:unauthenticated`` was asked for):
RBAC, admission (``request.userInfo``) and SelfSubjectAccessReview all see the person.
Each impersonated request is recorded, as the audit log's ``impersonatedUser``.
"""

from __future__ import annotations

from urllib.parse import unquote

from multidict import MultiMapping

from gpunode_sandbox.kubesim.authz import Attributes, Authorizer, UserInfo, forbidden
from gpunode_sandbox.kubesim.statuses import ApiError

EXTRA_PREFIX = "impersonate-extra-"
AUTHENTICATED = "system:authenticated"
UNAUTHENTICATED = "system:unauthenticated"
ANONYMOUS_USER = "system:anonymous"


def impersonate(
    authorizer: Authorizer, sender: UserInfo, headers: MultiMapping[str], *, method: str, path: str
) -> UserInfo:
    """The user a request runs as: ``sender``, or whom it impersonates (403 if not allowed)."""
    user = headers.get("Impersonate-User") or ""
    groups = [g for g in headers.getall("Impersonate-Group", []) if g]
    uid = headers.get("Impersonate-Uid") or ""
    extra: dict[str, list[str]] = {}
    for name in dict.fromkeys(k.lower() for k in headers):
        if name.startswith(EXTRA_PREFIX):
            key = unquote(name[len(EXTRA_PREFIX) :])
            extra.setdefault(key, []).extend(headers.getall(name, []))
    if not (user or groups or uid or extra):
        return sender
    if not user:
        raise ApiError(
            500,
            "Internal error occurred: requested impersonation of groups, extras or a uid "
            "without impersonating a user",
            reason="InternalError",
        )
    checks: list[Attributes] = []
    sa_groups: tuple[str, ...] = ()
    parts = user.split(":")
    if len(parts) == 4 and parts[:2] == ["system", "serviceaccount"] and parts[2] and parts[3]:
        checks.append(
            Attributes(
                sender, "impersonate", "", "serviceaccounts", namespace=parts[2], name=parts[3]
            )
        )
        sa_groups = ("system:serviceaccounts", f"system:serviceaccounts:{parts[2]}")
    else:
        checks.append(Attributes(sender, "impersonate", "", "users", name=user))
    checks += [Attributes(sender, "impersonate", "", "groups", name=g) for g in groups]
    for key, values in extra.items():
        checks += [
            Attributes(sender, "impersonate", "authentication.k8s.io", "userextras", key, name=v)
            for v in values
        ]
    if uid:
        checks.append(Attributes(sender, "impersonate", "authentication.k8s.io", "uids", name=uid))
    for attrs in checks:
        decision = authorizer.decide(attrs)
        if not decision.allowed:
            authorizer.denied.append(attrs)
            raise forbidden(attrs, decision.reason)
    as_groups = list(groups) if groups else list(sa_groups)
    if user != ANONYMOUS_USER and not {AUTHENTICATED, UNAUTHENTICATED} & set(as_groups):
        as_groups.append(AUTHENTICATED)
    acting = UserInfo(
        user,
        tuple(as_groups),
        uid=uid,
        extra=tuple((k, tuple(v)) for k, v in extra.items()),
    )
    authorizer.impersonated.append((method, path, sender, acting))
    return acting
