"""Roles, bindings and the authorisation decision (pure; the YAML is read elsewhere).

A policy maps Slack identities (user ids and user-group ids) to roles; a role says which
action tiers its members may request, which tiers they may approve, and whether they may
diagnose, undo and resolve. ``decide`` answers one question per click:
``Allow | Deny(reason) | NeedsApproval(quorum, approver_roles)``. Nothing is allowed without a
binding (default deny). Deny reasons are shown to the user as they are, so they say what to
do. ``parse_policy`` validates the whole file at start and names the bad key (and line, when
the reader passes a ``line_of`` lookup).

Impersonation (optional): ``impersonation.users`` maps Slack user ids to Kubernetes
identities (``bot.core.governance.impersonation``); with it enabled, tier actions run as that
identity and a user without one cannot request or undo an action.

Many clusters: a role may list ``clusters``; it then applies only there (an SRE of prod-eu
is no SRE of prod-us). A role without ``clusters`` applies in every cluster. The principal
carries the cluster in question (the incident's, the action's); with none (a listing across
clusters) every bound role counts.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

from bot.core.governance.impersonation import KubeIdentity
from bot.core.model.clusters import cluster_name_issue
from bot.core.model.validation import ErrorDetail, KeyedValueError, problems, validation_message
from bot.errors import PolicyError

Tier = Literal[1, 2, 3]
TIERS: tuple[Tier, ...] = (1, 2, 3)
Permission = Literal["diagnose", "undo", "resolve", "view"]
_USER_ID = r"^[UW][A-Z0-9]{2,}$"  # Slack member ids: U (or W, Enterprise Grid), then A-Z0-9
_GROUP_ID = r"^S[A-Z0-9]{2,}$"
_CHANNEL_ID = r"^[CGD][A-Z0-9]{2,}$"
_PATTERN_HINTS = {
    _USER_ID: "is not a Slack user id (they look like U0123ABCD: profile -> Copy member ID)",
    _GROUP_ID: "is not a Slack user-group id (they look like S0123ABCD)",
    _CHANNEL_ID: "is not a Slack channel id (they look like C0123ABCD)",
}
#: which id each pattern wants (the ``slack_id`` problem's ``kind``: its words per language)
_PATTERN_KINDS = {_USER_ID: "user", _GROUP_ID: "usergroup", _CHANNEL_ID: "channel"}


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Role(_Model):
    allows: tuple[Tier, ...] = Field((), description="action tiers members may request")
    can_approve: tuple[Tier, ...] = Field((), description="tiers members may approve")
    can_diagnose: bool = False
    can_undo: bool = False
    can_resolve: bool = False
    clusters: tuple[str, ...] = Field((), description="the clusters it applies in; empty: all")

    @field_validator("clusters")
    @classmethod
    def _cluster_names(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        for name in value:
            if issue := cluster_name_issue(name):
                key, text, params = issue
                raise KeyedValueError(text, key=key, params=params)
        return value

    def applies_in(self, cluster: str | None) -> bool:
        """In ``cluster`` (None: no one cluster is in question, so yes)."""
        return not self.clusters or cluster is None or cluster in self.clusters


class Binding(_Model):
    users: tuple[Annotated[str, Field(pattern=_USER_ID)], ...] = ()
    usergroups: tuple[Annotated[str, Field(pattern=_GROUP_ID)], ...] = ()


class TierApproval(_Model):
    quorum: int = Field(ge=0, le=10, description="approvers needed besides the requester")


def _default_approvals() -> dict[Tier, TierApproval]:
    # Tier 1 (cordon + evict) is the widest blast radius: a second person must agree.
    return {1: TierApproval(quorum=1), 2: TierApproval(quorum=0), 3: TierApproval(quorum=0)}


class Impersonation(_Model):
    """Tier actions run as the person (issue 21 §2): each Slack user who may act is mapped
    to a Kubernetes identity; the cluster's RBAC then decides, and its audit log names them.
    Off by default (actions run as the bot's ServiceAccount)."""

    enabled: bool = False
    users: dict[Annotated[str, Field(pattern=_USER_ID)], KubeIdentity] = Field(
        default_factory=dict, description="Slack user id -> Kubernetes user and groups"
    )


class Policy(_Model):
    roles: dict[str, Role] = Field(default_factory=dict)
    bindings: dict[str, Binding] = Field(default_factory=dict)
    channels: tuple[Annotated[str, Field(pattern=_CHANNEL_ID)], ...] = Field(
        (), description="channel ids gpunode serves; empty = all"
    )
    approvals: dict[Tier, TierApproval] = Field(default_factory=_default_approvals)
    approval_ttl_s: int = Field(900, ge=30, le=86400)
    impersonation: Impersonation = Field(default_factory=Impersonation)

    @field_validator("approvals", mode="before")
    @classmethod
    def _tier_keys(cls, value: Any) -> Any:
        # JSON and quoted YAML keys arrive as "1"; tiers are integers.
        if isinstance(value, Mapping):
            return {
                int(k) if isinstance(k, str) and k.strip().isdecimal() else k: v
                for k, v in value.items()
            }
        return value

    @model_validator(mode="after")
    def _consistent(self) -> Policy:
        for role in self.bindings:
            if role not in self.roles:
                known = ", ".join(sorted(self.roles)) or "none defined"
                raise KeyedValueError(
                    f"bindings.{role}: no such role (roles: {known})",
                    key="policy_no_such_role",
                    params={"role": role, "roles": sorted(self.roles)},
                )
        merged = {**_default_approvals(), **self.approvals}
        for tier, rule in merged.items():
            if rule.quorum and not any(tier in r.can_approve for r in self.roles.values()):
                raise KeyedValueError(
                    f"approvals.{tier}.quorum is {rule.quorum} but no role has {tier} in "
                    "can_approve; add it to a role or set the quorum to 0",
                    key="policy_quorum_unapprovable",
                    params={"tier": tier, "quorum": rule.quorum},
                )
        return self

    def quorum(self, tier: Tier) -> int:
        rule = self.approvals.get(tier) or _default_approvals()[tier]
        return rule.quorum


class Principal(_Model):
    """Who clicked, with user groups already resolved by the caller, and where."""

    user_id: str
    usergroup_ids: frozenset[str] = frozenset()
    channel_id: str = ""
    cluster: str | None = Field(
        None, description="the cluster acted on; None when no one cluster is in question"
    )


class ActionRequestInfo(_Model):
    tier: Tier
    undo: bool = Field(False, description="reverting an earlier action rather than acting")
    action_id: str = ""


class Allow(_Model):
    kind: Literal["allow"] = "allow"


#: the codes of ``Deny``: each has its words per language in ``templates/slack/refusals.j2``
#: (``reason`` is the English for the audit log and the terminal)
DENIALS = frozenset(
    {
        "channel_not_enabled",
        "identity_unmapped",
        "role_not_in_cluster",  # {cluster, scopes: [{role, clusters}]}
        "no_role_allows",  # {what, tier, cluster (when one is in question)}
        "role_needed",  # {what, tier, roles}
        "no_role_bound",
    }
)


class Deny(_Model):
    kind: Literal["deny"] = "deny"
    reason: str
    code: str = "denied"
    params: dict[str, Any] = Field(default_factory=dict)


class NeedsApproval(_Model):
    kind: Literal["needs_approval"] = "needs_approval"
    quorum: int = Field(ge=1)
    approver_roles: tuple[str, ...]


Decision = Annotated[Allow | Deny | NeedsApproval, Field(discriminator="kind")]


def identity_of(user_id: str, policy: Policy) -> KubeIdentity | None:
    """The Kubernetes identity ``user_id`` acts as; None when impersonation is off or the
    user is not mapped."""
    if not policy.impersonation.enabled:
        return None
    return policy.impersonation.users.get(user_id)


def _unmapped(principal: Principal, policy: Policy) -> Deny | None:
    if policy.impersonation.enabled and identity_of(principal.user_id, policy) is None:
        return Deny(
            reason="gpunode acts as the person here (impersonation) and the policy file maps "
            "no Kubernetes identity to you; ask an admin to add your Slack id under "
            "impersonation.users",
            code="identity_unmapped",
        )
    return None


def bound_roles(principal: Principal, policy: Policy) -> list[str]:
    """Roles bound to the user directly or through any of their user groups, in any
    cluster (sorted)."""
    return sorted(
        role
        for role, binding in policy.bindings.items()
        if principal.user_id in binding.users
        or principal.usergroup_ids.intersection(binding.usergroups)
    )


def roles_of(principal: Principal, policy: Policy) -> list[str]:
    """The bound roles that apply in the principal's cluster (sorted)."""
    return [
        r for r in bound_roles(principal, policy) if policy.roles[r].applies_in(principal.cluster)
    ]


def _channel_denied(principal: Principal, policy: Policy) -> Deny | None:
    if policy.channels and principal.channel_id not in policy.channels:
        return Deny(
            reason="gpunode is not enabled in this channel; use one of its incident channels "
            "or ask an admin to add this channel to the policy file",
            code="channel_not_enabled",
        )
    return None


def _roles_with(policy: Policy, test: Callable[[Role], bool], cluster: str | None) -> list[str]:
    return sorted(
        name for name, role in policy.roles.items() if test(role) and role.applies_in(cluster)
    )


def _need_role(
    roles: list[str],
    what: str,
    *,
    principal: Principal | None = None,
    policy: Policy | None = None,
    test: Callable[[Role], bool] | None = None,
) -> Deny:
    """Refuse ``what``. When the user holds a role that would allow it in another cluster,
    say so: the refusal is about the cluster, not the role."""
    cluster = principal.cluster if principal is not None else None
    if policy is not None and test is not None and principal is not None and cluster is not None:
        elsewhere = [
            name
            for name in bound_roles(principal, policy)
            if test(policy.roles[name]) and not policy.roles[name].applies_in(cluster)
        ]
        if elsewhere:
            scopes = "; ".join(
                f"{name} applies in {', '.join(policy.roles[name].clusters)} only"
                for name in elsewhere
            )
            return Deny(
                reason=f"this is cluster {cluster} and your role does not cover it "
                f"({scopes}); ask an admin for a role in {cluster}",
                code="role_not_in_cluster",
                params={
                    "cluster": cluster,
                    "scopes": [
                        {"role": n, "clusters": list(policy.roles[n].clusters)} for n in elsewhere
                    ],
                },
            )
    if not roles:
        where = "" if cluster is None else f" in cluster {cluster}"
        return Deny(
            reason=f"no role in the policy file allows {what}{where}; ask an admin to add one",
            code="no_role_allows",
            params=_what(what) | ({} if cluster is None else {"cluster": cluster}),
        )
    names = " or ".join(roles)
    plural = "role" if len(roles) == 1 else "roles"
    return Deny(
        reason=f"you need the {names} {plural} for {what}; ask an admin to add you to it in "
        "the policy file",
        code="role_needed",
        params=_what(what) | {"roles": list(roles)},
    )


def _what(what: str) -> dict[str, Any]:
    """``tier 3`` -> what=tier, tier=3; a permission (``undo``, ``view``) as it is."""
    if what.startswith("tier "):
        return {"what": "tier", "tier": int(what.split()[1])}
    return {"what": what}


def decide(
    principal: Principal, request: ActionRequestInfo, policy: Policy
) -> Allow | Deny | NeedsApproval:
    """May ``principal`` request this action here, and does it need approvals first?"""
    denied = _channel_denied(principal, policy)
    if denied:
        return denied
    mine = [policy.roles[name] for name in roles_of(principal, policy)]
    where = principal.cluster

    def undoes(r: Role) -> bool:
        return r.can_undo

    def requests(r: Role) -> bool:
        return request.tier in r.allows

    if request.undo:
        if any(undoes(role) for role in mine):
            return _unmapped(principal, policy) or Allow()
        return _need_role(
            _roles_with(policy, undoes, where),
            "undo",
            principal=principal,
            policy=policy,
            test=undoes,
        )
    if not any(requests(role) for role in mine):
        return _need_role(
            _roles_with(policy, requests, where),
            f"tier {request.tier}",
            principal=principal,
            policy=policy,
            test=requests,
        )
    if unmapped := _unmapped(principal, policy):
        return unmapped
    quorum = policy.quorum(request.tier)
    if quorum == 0:
        return Allow()
    approvers = _roles_with(policy, lambda r: request.tier in r.can_approve, where)
    return NeedsApproval(quorum=quorum, approver_roles=tuple(approvers))


def can_approve(principal: Principal, tier: Tier, policy: Policy) -> bool:
    """True when one of the principal's roles may approve ``tier`` in this channel."""
    if _channel_denied(principal, policy):
        return False
    return any(tier in policy.roles[name].can_approve for name in roles_of(principal, policy))


def authorize(principal: Principal, permission: Permission, policy: Policy) -> Allow | Deny:
    """For the non-action verbs: diagnose, undo, resolve, and ``view`` (status, top,
    timeline), which any role grants: someone bound to no role sees nothing either."""
    denied = _channel_denied(principal, policy)
    if denied:
        return denied
    if permission == "view":
        if roles_of(principal, policy):
            return Allow()
        if bound_roles(principal, policy):
            return _need_role([], "view", principal=principal, policy=policy, test=lambda r: True)
        return Deny(
            reason="you are bound to no role in the policy file, so gpunode shows you nothing; "
            "ask an admin to bind you to a role (e.g. viewer)",
            code="no_role_bound",
        )
    flag = f"can_{permission}"

    def grants(r: Role) -> bool:
        return bool(getattr(r, flag))

    if any(grants(policy.roles[name]) for name in roles_of(principal, policy)):
        return Allow()
    return _need_role(
        _roles_with(policy, grants, principal.cluster),
        permission,
        principal=principal,
        policy=policy,
        test=grants,
    )


def parse_policy(
    data: Any,
    *,
    source: str = "policy",
    line_of: Callable[[tuple[str | int, ...]], int | None] | None = None,
) -> Policy:
    """Validate a loaded policy document; PolicyError lists every problem with its key path
    (keyed ``policy_invalid``: ``bot.core.model.validation.problems``, a Slack id that does
    not match its pattern as a ``slack_id`` problem)."""
    if data is None:
        data = {}
    if not isinstance(data, Mapping):
        raise PolicyError(
            f"{source}: the policy must be a mapping with roles and bindings",
            key="policy_not_mapping",
            params={"source": source},
        )
    try:
        return Policy.model_validate(data)
    except ValidationError as exc:
        said = validation_message(exc, top=None, message=_policy_problem, line_of=line_of)
        keyed = problems(exc, message=_policy_problem, line_of=line_of)
        for problem, err in zip(keyed, exc.errors(include_url=False), strict=True):
            ctx = problem["ctx"]
            kind = (
                _PATTERN_KINDS.get(str(ctx.get("pattern", ""))) if isinstance(ctx, dict) else None
            )
            if problem["type"] == "string_pattern_mismatch" and kind:
                # the English names the value too (``_policy_problem``): a Slack id, no secret
                problem.update(type="slack_id", ctx={"kind": kind, "value": repr(err["input"])})
        raise PolicyError(
            f"{source} is invalid: {said}",
            key="policy_invalid",
            params={"source": source, "problems": keyed},
        ) from exc


def _policy_problem(err: ErrorDetail) -> str:
    """pydantic's message without its "Value error, " prefix; a name that does not match
    its pattern says what the pattern wants."""
    ctx = err.get("ctx")
    pattern = ctx.get("pattern", "") if isinstance(ctx, dict) else ""
    hint = _PATTERN_HINTS.get(str(pattern))
    if hint:
        return f"{err['input']!r} {hint}"
    return str(err["msg"]).removeprefix("Value error, ")
